"""One contract for the claim primitive (``shared_lib.delivery.idempotency.Claims``), every Store adapter:
the in-memory store and Firestore on the emulator."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from shared_lib.delivery.idempotency import Claims, ClaimState
from shared_lib.ports import Store, Transaction

NOW = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
LEASE = timedelta(seconds=30)
TTL = timedelta(days=3)
PATH = "orgs/a/idempotency/T1-brain-0"


@pytest.fixture(params=["memory", "firestore"])
def store(request: pytest.FixtureRequest) -> Store:
    return request.getfixturevalue(f"{request.param}_store")


@pytest.fixture
def claims(store: Store) -> Claims:
    return Claims(store, ttl=TTL)


def test_a_fresh_claim_is_acquired_with_a_lease_and_an_expiry(claims: Claims, store: Store):
    # WHEN nobody has claimed the path yet
    claim = claims.claim(PATH, now=NOW, lease=LEASE, fields={"tool": "note"})
    # THEN it is acquired, first attempt, and the stored record says so
    assert claim.state is ClaimState.ACQUIRED and claim.attempts == 1 and not claim.took_over
    stored = store.get(PATH)
    assert stored is not None
    assert stored["status"] == "in_progress" and stored["attempts"] == 1 and stored["tool"] == "note"
    assert stored["lease_until"] == NOW + LEASE and stored["expires_at"] == NOW + TTL
    assert stored["holder"] == claim.holder != ""


def test_a_completed_claim_returns_completed_with_its_result(claims: Claims):
    # GIVEN a claim completed with a result
    claims.claim(PATH, now=NOW, lease=LEASE)
    claims.complete(PATH, now=NOW, result={"outcome": "ok", "n": 2})
    # WHEN it is claimed again, even long after every lease
    again = claims.claim(PATH, now=NOW + timedelta(days=1), lease=LEASE)
    # THEN nothing is acquired and the stored result comes back
    assert again.state is ClaimState.COMPLETED and again.result == {"outcome": "ok", "n": 2}


def test_a_held_lease_is_busy_and_changes_nothing(claims: Claims, store: Store):
    first = claims.claim(PATH, now=NOW, lease=LEASE)
    second = claims.claim(PATH, now=NOW + LEASE - timedelta(seconds=1), lease=LEASE)
    assert second.state is ClaimState.BUSY
    assert store.get(PATH) == first.record


def test_an_expired_lease_is_taken_over_with_one_more_attempt(claims: Claims, store: Store):
    # GIVEN a worker claimed the path and died (its lease ran out)
    first = claims.claim(PATH, now=NOW, lease=LEASE)
    # WHEN a redelivery arrives after the lease
    later = NOW + LEASE + timedelta(seconds=1)
    second = claims.claim(PATH, now=later, lease=LEASE)
    # THEN it takes the claim over: second attempt, new holder, new lease
    assert second.state is ClaimState.ACQUIRED and second.took_over and second.attempts == 2
    assert second.holder != first.holder
    stored = store.get(PATH)
    assert stored is not None and stored["attempts"] == 2 and stored["lease_until"] == later + LEASE


def test_concurrent_claimants_exactly_one_acquires(claims: Claims):
    states: list[ClaimState] = []
    errors: list[BaseException] = []
    start = threading.Barrier(5)

    def claimant() -> None:
        try:
            start.wait()
            states.append(claims.claim(PATH, now=NOW, lease=LEASE).state)
        except BaseException as exc:  # collected: a thread's failure must fail the test
            errors.append(exc)

    threads = [threading.Thread(target=claimant) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(s.value for s in states) == ["acquired"] + ["busy"] * 4


def _note_effect(fail_after_write: bool = False) -> Any:
    """An effect in the store: bumps a counter document inside the claim's transaction."""

    def effect(txn: Transaction) -> dict[str, Any]:
        doc = txn.get("orgs/a/notes/n1") or {"n": 0}
        txn.set("orgs/a/notes/n1", {"n": doc["n"] + 1})
        if fail_after_write:
            raise RuntimeError("crash before the transaction commits")
        return {"noted": doc["n"] + 1}

    return effect


def test_in_transaction_a_crash_before_commit_leaves_neither_effect_nor_receipt(claims: Claims, store: Store):
    # GIVEN a delivery that crashes between its effect and its receipt (one transaction)
    with pytest.raises(RuntimeError):
        claims.run_once(PATH, _note_effect(fail_after_write=True), now=NOW)
    # THEN nothing of it is committed
    assert store.get("orgs/a/notes/n1") is None and store.get(PATH) is None
    # AND the redelivery does the effect once
    result, replayed = claims.run_once(PATH, _note_effect(), now=NOW)
    assert (result, replayed) == ({"noted": 1}, False)
    assert store.get("orgs/a/notes/n1") == {"n": 1}


def test_in_transaction_a_redelivery_after_the_commit_sees_the_receipt_and_does_not_repeat(
    claims: Claims, store: Store
):
    # GIVEN a delivery whose effect and receipt committed, then the worker died before acknowledging
    first, _ = claims.run_once(PATH, _note_effect(), now=NOW, fields={"tool": "note"})
    # WHEN the message is redelivered
    again, replayed = claims.run_once(PATH, _note_effect(), now=NOW + timedelta(minutes=5))
    # THEN the stored result is returned and the effect is not repeated
    assert replayed and again == first == {"noted": 1}
    assert store.get("orgs/a/notes/n1") == {"n": 1}
    receipt = store.get(PATH)
    assert receipt is not None
    assert (
        receipt["status"] == "completed" and receipt["tool"] == "note" and receipt["expires_at"] == NOW + TTL
    )


def test_release_lets_the_next_claimant_in_at_once(claims: Claims):
    claims.claim(PATH, now=NOW, lease=LEASE)
    claims.release(PATH)
    assert claims.claim(PATH, now=NOW, lease=LEASE).state is ClaimState.ACQUIRED


def test_release_by_a_stale_holder_keeps_the_current_holders_claim(claims: Claims):
    # GIVEN a worker whose lease expired and whose claim was taken over
    stale = claims.claim(PATH, now=NOW, lease=LEASE)
    current = claims.claim(PATH, now=NOW + LEASE, lease=LEASE)
    # WHEN the stale worker fails and releases with its token
    claims.release(PATH, holder=stale.holder)
    # THEN the current holder still holds the claim
    assert claims.claim(PATH, now=NOW + LEASE, lease=LEASE).state is ClaimState.BUSY
    claims.release(PATH, holder=current.holder)
    assert claims.claim(PATH, now=NOW + LEASE, lease=LEASE).state is ClaimState.ACQUIRED


def test_renew_extends_the_lease_only_for_its_holder(claims: Claims, store: Store):
    # GIVEN a holder that renews its lease (a heartbeat) before it runs out
    claim = claims.claim(PATH, now=NOW, lease=LEASE)
    beat = NOW + timedelta(seconds=20)
    assert claims.renew(PATH, now=beat, lease=LEASE, holder=claim.holder) is True
    # THEN a claimant after the first lease but within the renewed one is still busy
    assert claims.claim(PATH, now=NOW + LEASE + timedelta(seconds=1), lease=LEASE).state is ClaimState.BUSY
    # AND someone else's token renews nothing
    assert claims.renew(PATH, now=beat + LEASE, lease=LEASE, holder="not-the-holder") is False
    stored = store.get(PATH)
    assert stored is not None and stored["lease_until"] == beat + LEASE
    # AND once another delivery took over, the old holder cannot renew
    taken = claims.claim(PATH, now=beat + LEASE + timedelta(seconds=1), lease=LEASE)
    assert taken.state is ClaimState.ACQUIRED
    assert (
        claims.renew(PATH, now=beat + LEASE + timedelta(seconds=2), lease=LEASE, holder=claim.holder) is False
    )
    # AND a completed claim cannot be renewed
    claims.complete(PATH, now=NOW, result={})
    assert claims.renew(PATH, now=NOW, lease=LEASE, holder=taken.holder) is False


def test_a_zero_lease_is_never_held_and_counts_every_attempt(claims: Claims, store: Store):
    # The dead-letter counter and the send receipt: every claimant takes over and counts.
    counts = [claims.claim(PATH, now=NOW, lease=timedelta(0)).attempts for _ in range(3)]
    assert counts == [1, 2, 3]
    stored = store.get(PATH)
    assert stored is not None and "lease_until" not in stored


def test_a_failed_claim_is_taken_over_at_once_and_a_completed_one_never_fails(claims: Claims, store: Store):
    claims.claim(PATH, now=NOW, lease=LEASE)
    claims.fail(PATH, error="TaskBackendError")
    stored = store.get(PATH)
    assert stored is not None and stored["status"] == "failed" and stored["error"] == "TaskBackendError"
    retry = claims.claim(PATH, now=NOW, lease=LEASE)
    assert retry.state is ClaimState.ACQUIRED and retry.took_over and retry.attempts == 2
    claims.complete(PATH, now=NOW, result={"ok": True})
    claims.fail(PATH, error="late")  # a late failure after success
    assert claims.claim(PATH, now=NOW, lease=LEASE).state is ClaimState.COMPLETED


def test_a_familys_status_words_are_its_own(store: Store):
    # Tool receipts say "done", send receipts "sending"/"sent": the algorithm is the same.
    sends = Claims(store, ttl=TTL, in_progress="sending", completed="sent")
    sends.claim(PATH, now=NOW, lease=timedelta(0))
    stored = store.get(PATH)
    assert stored is not None and stored["status"] == "sending"
    sends.complete(PATH, now=NOW, fields={"provider_message_id": "m1"})
    assert sends.claim(PATH, now=NOW, lease=timedelta(0)).state is ClaimState.COMPLETED
    assert Claims(store, ttl=TTL).claim(PATH, now=NOW, lease=LEASE).state is ClaimState.ACQUIRED


def test_complete_by_a_stale_holder_keeps_the_current_holders_claim(claims: Claims, store: Store):
    # GIVEN a worker whose lease expired and whose claim another delivery took over
    stale = claims.claim(PATH, now=NOW, lease=LEASE)
    current = claims.claim(PATH, now=NOW + LEASE, lease=LEASE)
    # WHEN the stale worker finishes and completes with its token
    assert claims.complete(PATH, now=NOW + LEASE, result={"outcome": "stale"}, holder=stale.holder) is False
    # THEN the current holder's claim is untouched, and only it completes the claim
    stored = store.get(PATH)
    assert stored is not None and stored["status"] == "in_progress" and stored["holder"] == current.holder
    assert claims.complete(PATH, now=NOW + LEASE, result={"outcome": "ok"}, holder=current.holder) is True
    assert claims.claim(PATH, now=NOW + LEASE, lease=LEASE).result == {"outcome": "ok"}
