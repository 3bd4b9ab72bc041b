"""The whole promotion path of production, on the Firestore emulator, as the runbook walks it.

prod starts in shadow → shadow comparisons accumulate from real turns → `charter flags
promote` writes canary 10 into the environment's file → `charter gate promotion` reads the
environment's store and lets it through → the file is applied (as Terraform does) → the
same people keep the LLM arm → an injected regression in one organisation trips the guard
for that organisation only → the next promotion is refused by its gate.

Only the operator commands and the product's own code run here; the pipeline's
`terraform apply` of the flags file is `seed_flags` of the same file.
"""

from __future__ import annotations

import shutil
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit" / "rollout"))

from rollout_fakes import FailingLLM, WallClock, make_runtime, send

from shared_lib.cli import main as charter
from shared_lib.flags import FlagsProvider, load_flags_file, seed_flags
from shared_lib.flags.stages import FLAGS_DIR, env_flags_file, stage_of
from shared_lib.rollout.guard import RollbackGuard
from shared_lib.tools.directory import seed_directory

pytestmark = pytest.mark.integration
ORGS = ("acme", "beta", "gamma")
PEOPLE = [
    {"user_id": f"p{i:02d}", "name": f"社員{i:02d}", "level": 2, "department_id": "d1"} for i in range(40)
]
# Requests both arms understand the same way (the legacy keyword brain and the model).
AGREED = ("田中さんに明日までに見積書を作成するタスクをお願い", "こんにちは", "今日は暑いね〜")


@pytest.fixture
def flags_dir(tmp_path: Path) -> Path:
    """A copy of the committed environment files (the repository's stay untouched)."""
    target = tmp_path / "flags"
    shutil.copytree(FLAGS_DIR, target)
    return target


def gate(project: str, flags_dir: Path, env: str = "prod") -> int:
    file = env_flags_file(env, flags_dir)
    return charter(
        ["gate", "promotion", "--env", env, "--file", str(file), "--store", "firestore", "--project", project]
    )


def test_shadow_then_canary_then_an_org_regression_blocks_the_next_promotion(
    tmp_path, flags_dir, firestore_store, firestore_project, monkeypatch, capsys
):
    monkeypatch.setenv("CHARTER_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("PUBSUB_EMULATOR_HOST", raising=False)
    # the product's clock starts at the wall clock's now: the operator's `charter gate` reads the
    # records of the last 24 hours by the wall clock, and a turn is dated by the product's clock
    clock = WallClock(datetime.now(UTC))
    llm = FailingLLM()
    rt = make_runtime(tmp_path, llm=llm, store=firestore_store, clock=clock, orgs=ORGS)
    for org in ORGS:
        seed_directory(firestore_store, org, PEOPLE, {"d1": None})
    rt.rollback_guard = RollbackGuard(evaluate_every_seconds=0)

    # GIVEN production as committed: shadow, nobody served by the LLM arm, applied to its store
    prod = env_flags_file("prod", flags_dir)
    assert stage_of(load_flags_file(prod)).name == "shadow"
    seed_flags(firestore_store, prod)
    assert {rt.flags.evaluate(org, p["user_id"], clock())[0].arm for org in ORGS for p in PEOPLE} == {
        "legacy"
    }

    # WHEN real turns run in shadow, every one also answered by the dry-run candidate
    for i in range(210):
        org, person = ORGS[i % 3], PEOPLE[i % len(PEOPLE)]["user_id"]
        send(rt, AGREED[i % len(AGREED)], org=org, user=person, room=f"s{i}")
    # AND the operator promotes stg, then prod, one stage each (the reviewed file change)
    assert charter(["flags", "promote", "--env", "stg", "--dir", str(flags_dir)]) == 0
    assert charter(["flags", "promote", "--env", "prod", "--dir", str(flags_dir)]) == 0
    assert stage_of(load_flags_file(prod)).name == "canary-10"
    capsys.readouterr()
    # THEN the pipeline's gate reads production's store: the shadow evidence lets canary 10 through
    assert gate(firestore_project, flags_dir) == 0, capsys.readouterr()
    seed_flags(firestore_store, prod)  # what the gated `terraform apply` does

    # AND about one person in ten gets the LLM arm, the same people in another process later
    def llm_people(flags: FlagsProvider) -> set[tuple[str, str]]:
        return {
            (org, p["user_id"])
            for org in ORGS
            for p in PEOPLE
            if flags.evaluate(org, p["user_id"], clock())[0].arm == "llm"
        }

    served = llm_people(rt.flags)
    assert 8 <= len(served) <= 30  # 10 % of 180 people, by a stable hash
    assert llm_people(FlagsProvider(firestore_store, ttl_seconds=0)) == served

    # WHEN the LLM arm regresses for one organisation's canary people (an injected failure)
    by_org = {org: sorted(user for o, user in served if o == org) for org in ORGS}
    broken, healthy = sorted(ORGS, key=lambda org: len(by_org[org]), reverse=True)[:2]
    assert by_org[broken] and by_org[healthy], by_org
    llm.failing = True
    for i in range(24):
        send(rt, AGREED[0], org=broken, user=by_org[broken][i % len(by_org[broken])], room=f"x{i}")
    llm.failing = False
    for i in range(24):
        send(
            rt,
            AGREED[i % len(AGREED)],
            org=healthy,
            user=by_org[healthy][i % len(by_org[healthy])],
            room=f"h{i}",
        )
    # THEN the guard sends that organisation back to legacy, and only it
    after = {(org, user): rt.flags.evaluate(org, user, clock())[0] for org, user in served}
    assert {after[(broken, u)].reason for u in by_org[broken]} == {"ORG_OVERRIDE"}
    assert {after[(org, u)].arm for org, u in served if org != broken} == {"llm"}

    # WHEN the operator asks for the next stage
    assert charter(["flags", "promote", "--env", "stg", "--dir", str(flags_dir)]) == 0
    assert charter(["flags", "promote", "--env", "prod", "--dir", str(flags_dir)]) == 0
    assert stage_of(load_flags_file(prod)).name == "canary-50"
    capsys.readouterr()
    # THEN the canary gate reads the regression in production's records and refuses it
    assert gate(firestore_project, flags_dir) == 1
    refused = capsys.readouterr().out
    assert "canary gate" in refused and "[FAIL]" in refused, refused
    assert "[NO] error_rate:" in refused, refused
