"""The flags file Terraform writes to Firestore validates against the product's schema."""

from shared_lib.flags import REPO_FLAGS_FILE, load_flags_file
from shared_lib.flags.stages import env_flags_file


def test_the_repository_flags_file_validates() -> None:
    doc = load_flags_file(REPO_FLAGS_FILE)
    assert doc.version and doc.brain_mode in ("legacy", "shadow", "canary", "llm")


def test_dev_and_stg_run_best_of_n_and_self_critique_at_the_seeds_rates_prod_leaves_them_to_the_operator() -> (
    None
):
    # seed 000 §5.5.3: self-critique on about 20 % of important judgements; seed 001 §3-4: Best-of-N
    # (issue 37: both shipped off everywhere, so nothing exercised them before production)
    for env in ("dev", "stg"):
        doc = load_flags_file(env_flags_file(env))
        assert doc.self_critique_rate == 0.2, env
        assert (
            doc.best_of_n.enabled_for("any-organisation") and doc.best_of_n.max_cost_usd_per_turn == 0.05
        ), env
    # prod pays for both with real money on real conversations: its operator opts in (ARCHITECTURE)
    prod = load_flags_file(env_flags_file("prod"))
    assert prod.self_critique_rate <= 0.2 and prod.best_of_n.max_cost_usd_per_turn <= 0.05
