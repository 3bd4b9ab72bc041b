"""The LLM call log's entries ride on the stage's claim completion (``delivery.riders``): a
claimed stage that calls the model costs its claim's two writes, not two plus one an entry."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from infra.bench.hops import CountingStore
from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.delivery import riders
from shared_lib.delivery.idempotency import CLAIM_WAIT_SLACK, layer_claims

CLAIM = "orgs/acme/idempotency/T7-brain-0"
LEASE = timedelta(seconds=10)
T0 = datetime(2026, 11, 25, 9, 0, tzinfo=UTC)


def entry(call_id: str, text: str) -> tuple[str, dict[str, object]]:
    return f"orgs/acme/llm_calls/{call_id}", {"call_type": "proposal", "response_text": text}


def counted() -> CountingStore:
    return CountingStore(MemoryStore())


def ops(store: CountingStore) -> dict[str, int]:
    return dict(store.ops["ingress"])


def test_a_stage_s_call_log_entries_are_written_in_its_completion_s_commit():
    # GIVEN a brain stage holding its claim that calls the model twice (a proposal, a self-check)
    store = counted()
    claims = layer_claims(store)  # type: ignore[arg-type]
    held = claims.claim(CLAIM, now=T0, lease=LEASE)
    with riders.carrying() as carried:
        riders.write(store, *entry("c1", "明日の10時に田中さんと打合せ、登録するウル🐺"))  # type: ignore[arg-type]
        riders.write(store, *entry("c2", "ok"))  # type: ignore[arg-type]
        riders.write(store, "orgs/acme/llm_calls/c1", {"fallbacks": 1}, merge=True)  # type: ignore[arg-type]
        # THEN nothing is written while the stage runs
        assert ops(store) == {"create": 1}
    # WHEN it completes within its lease
    done = claims.complete(
        CLAIM,
        now=T0 + timedelta(seconds=2),
        result={"outcome": "proposed"},
        holder=held.holder,
        held_until=held.record["lease_until"],
        also=carried.take(),
    )
    # THEN one batch carries the completion and the entries: two writes for the stage, not five
    assert done is True and ops(store) == {"create": 1, "set_many": 1}
    assert store.get(CLAIM)["status"] == "completed"  # type: ignore[index]
    first = store.get("orgs/acme/llm_calls/c1")
    assert first == {
        "call_type": "proposal",
        "response_text": "明日の10時に田中さんと打合せ、登録するウル🐺",
        "fallbacks": 1,
    }
    assert store.get("orgs/acme/llm_calls/c2") is not None


def test_a_late_completion_checks_its_holder_and_still_writes_the_entries():
    # GIVEN a stage whose lease lapsed while it ran and whose claim another delivery took over
    store = counted()
    claims = layer_claims(store)  # type: ignore[arg-type]
    stale = claims.claim(CLAIM, now=T0, lease=LEASE)
    claims.claim(CLAIM, now=T0 + LEASE + timedelta(seconds=1), lease=LEASE)
    with riders.carrying() as carried:
        riders.write(store, *entry("c3", "了解ウル"))  # type: ignore[arg-type]
    # WHEN the stale holder completes near its lease's end
    done = claims.complete(
        CLAIM,
        now=T0 + LEASE - CLAIM_WAIT_SLACK,
        result={"outcome": "proposed"},
        holder=stale.holder,
        held_until=stale.record["lease_until"],
        also=carried.take(),
    )
    # THEN the claim stays the new holder's, and the call it made is still on the log
    assert done is False and store.get(CLAIM)["status"] == "in_progress"  # type: ignore[index]
    assert store.get("orgs/acme/llm_calls/c3") == {"call_type": "proposal", "response_text": "了解ウル"}


def test_a_stage_that_fails_writes_its_entries_at_once_and_a_call_after_the_stage_writes_alone():
    # GIVEN a stage whose model call timed out (its entry is the evidence) and that raises
    store = counted()
    with riders.carrying() as carried:
        riders.write(store, *entry("c4", ""))  # type: ignore[arg-type]
    riders.flush(store, carried)  # type: ignore[arg-type]
    # THEN the entry is written in one batch
    assert ops(store) == {"set_many": 1} and store.inner.get("orgs/acme/llm_calls/c4") is not None
    # AND a source's thread that answers after its stage took the writes writes its own entry
    with riders.carrying() as late:
        late.take()
        riders.write(store, *entry("c5", "遅れたウル"))  # type: ignore[arg-type]
    # AND outside any stage an entry is its own write, as before
    riders.write(store, *entry("c6", "会話の外ウル"))  # type: ignore[arg-type]
    assert ops(store) == {"set_many": 1, "set": 2}
    assert store.inner.get("orgs/acme/llm_calls/c5") is not None


def test_past_the_commit_s_bound_a_stage_s_further_entries_write_at_once():
    # GIVEN a stage that calls the model more often than one commit may carry (Best-of-N's
    # candidates, a self-check, a summary: each entry up to 1 MiB, a commit up to 10 MiB)
    store = counted()
    with riders.carrying() as carried:
        for i in range(riders.MAX_CARRIED + 2):
            riders.write(store, *entry(f"b{i}", f"候補{i}ウル"))  # type: ignore[arg-type]
    # THEN the first MAX_CARRIED ride on the completion and the two past it were written alone
    assert len(carried.take()) == riders.MAX_CARRIED
    assert ops(store) == {"set": 2}
