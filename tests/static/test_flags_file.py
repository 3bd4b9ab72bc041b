"""The flags file Terraform writes to Firestore validates against the product's schema."""

from shared_lib.flags import REPO_FLAGS_FILE, load_flags_file


def test_the_repository_flags_file_validates() -> None:
    doc = load_flags_file(REPO_FLAGS_FILE)
    assert doc.version and doc.brain_mode in ("legacy", "shadow", "canary", "llm")
