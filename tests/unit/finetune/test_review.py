"""Review: accept, edit, reject, by a person of level 6 (seed 001 §29.5: human review)."""

from __future__ import annotations

import pytest

from shared_lib.features.finetune.state import review
from shared_lib.features.finetune.state.staging import candidate_path
from shared_lib.memory.ingest import NotAllowed
from shared_lib.tools.directory import seed_directory
from tests.unit.finetune.ft_fakes import NOW, ORG, RETENTION, opted_in_store, plant, tool_proposal

PEOPLE = [
    {"user_id": "u-ceo", "name": "社長", "level": 6, "department_id": "d1"},
    {"user_id": "u-staff", "name": "社員", "level": 2, "department_id": "d1"},
]


@pytest.fixture
def store():  # type: ignore[no-untyped-def]
    s = opted_in_store()
    seed_directory(s, ORG, PEOPLE, {"d1": None})
    plant(s, "t1", status="pending")
    return s


def test_accept_records_the_reviewer_and_time_and_keeps_the_staged_expiry(store):  # type: ignore[no-untyped-def]
    done = review.accept(store, ORG, "t1", now=NOW, by="u-ceo")
    doc = store.get(candidate_path(ORG, "t1"))
    assert done["status"] == doc["status"] == "accepted"
    assert doc["review"] == {"status": "accepted", "by": "u-ceo", "at": NOW}
    assert doc["expires_at"] == NOW + RETENTION


def test_only_a_named_level_six_person_of_the_directory_reviews(store):  # type: ignore[no-untyped-def]
    with pytest.raises(NotAllowed) as refused:
        review.accept(store, ORG, "t1", now=NOW, by="u-staff")
    assert refused.value.code == "level"
    with pytest.raises(NotAllowed):
        review.reject(store, ORG, "t1", reason="x", now=NOW, by="u-nobody")
    # no anonymous review: an empty or blank name is no person (there is no "operator" default)
    for nobody in ("", "   ", "\u3000"):
        with pytest.raises(NotAllowed) as unnamed:
            review.accept(store, ORG, "t1", now=NOW, by=nobody)
        assert unnamed.value.code == "unknown_person"
        with pytest.raises(NotAllowed):
            review.edit(store, ORG, "t1", reply="承知ウル🐺", now=NOW, by=nobody)
    with pytest.raises(TypeError):
        review.accept(store, ORG, "t1", now=NOW)  # type: ignore[call-arg]
    assert store.get(candidate_path(ORG, "t1"))["status"] == "pending"
    assert review.accept(store, ORG, "t1", now=NOW, by="u-ceo")["review"]["by"] == "u-ceo"


def test_reject_needs_a_reason_and_masks_it(store):  # type: ignore[no-untyped-def]
    with pytest.raises(review.ReviewError):
        review.reject(store, ORG, "t1", reason=" ", now=NOW, by="u-ceo")
    review.reject(store, ORG, "t1", reason="番号 090-1234-5678 が残っている", now=NOW, by="u-ceo")
    doc = store.get(candidate_path(ORG, "t1"))
    assert doc["status"] == "rejected" and "090-1234-5678" not in doc["review"]["reason"]


def test_an_edited_reply_becomes_a_masked_text_response_target(store):  # type: ignore[no-untyped-def]
    review.edit(store, ORG, "t1", reply="折り返しは 090-9999-0000 にウル🐺", now=NOW, by="u-ceo")
    doc = store.get(candidate_path(ORG, "t1"))
    assert doc["status"] == "edited"
    target = doc["target"]["proposal"]
    assert target["output_type"] == "text_response" and "090-9999-0000" not in str(doc)
    assert "[PHONE" in target["text_response"]


def test_an_edited_proposal_is_revalidated_against_the_brains_schema_and_the_tools(store):  # type: ignore[no-untyped-def]
    with pytest.raises(review.ReviewError) as bad:
        review.edit(store, ORG, "t1", proposal={"output_type": "tool_call"}, now=NOW, by="u-ceo")
    assert bad.value.code == "invalid"
    with pytest.raises(review.ReviewError):
        review.edit(
            store,
            ORG,
            "t1",
            proposal=tool_proposal("no_such_tool"),
            now=NOW,
            by="u-ceo",
            known_tools={"create_task"},
        )
    review.edit(store, ORG, "t1", proposal=tool_proposal(), now=NOW, by="u-ceo", known_tools={"create_task"})
    assert (
        store.get(candidate_path(ORG, "t1"))["target"]["proposal"]["tool_calls"][0]["tool_name"]
        == "create_task"
    )


def test_a_corrected_candidate_without_a_target_cannot_be_accepted_as_is(store):  # type: ignore[no-untyped-def]
    plant(store, "t2", status="pending", kind="corrected", target=None)
    with pytest.raises(review.ReviewError) as refused:
        review.accept(store, ORG, "t2", now=NOW, by="u-ceo")
    assert refused.value.code == "no_target"
    with pytest.raises(review.ReviewError) as missing:
        review.accept(store, ORG, "t9", now=NOW, by="u-ceo")
    assert missing.value.code == "not_found"
