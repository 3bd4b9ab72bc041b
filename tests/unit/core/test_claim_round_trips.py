"""The claim's common path costs one write each way (``Claims.claim`` / ``complete``).

A first delivery acquires with one ``create``; its holder completes with one plain write
while the lease it last wrote still runs past now by the slack. Everything else (a record
already there, a completion near or past the lease) keeps the transaction's checks."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from infra.bench.hops import CountingStore
from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.delivery.idempotency import CLAIM_WAIT_SLACK, Claims, ClaimState, layer_claims

PATH = "orgs/acme/idempotency/T1-guardian-0"
LEASE = timedelta(seconds=10)
T0 = datetime(2026, 11, 24, 9, 0, tzinfo=UTC)


def counted() -> tuple[Claims, CountingStore]:
    store = CountingStore(MemoryStore())
    return layer_claims(store), store  # type: ignore[arg-type]


def ops(store: CountingStore) -> dict[str, int]:
    return dict(store.ops["ingress"])  # no delivery target set: the default bucket


def test_a_first_claim_and_its_completion_within_the_lease_are_one_write_each():
    claims, store = counted()
    held = claims.claim(PATH, now=T0, lease=LEASE)
    assert held.state is ClaimState.ACQUIRED and not held.took_over and held.attempts == 1
    assert ops(store) == {"create": 1}
    done = claims.complete(
        PATH,
        now=T0 + timedelta(seconds=3),
        result={"outcome": "ok"},
        holder=held.holder,
        held_until=held.record["lease_until"],
    )
    assert done is True and ops(store) == {"create": 1, "set": 1}
    assert claims.claim(PATH, now=T0 + timedelta(seconds=4), lease=LEASE).result == {"outcome": "ok"}


def test_a_redelivery_finds_the_record_and_the_transaction_decides():
    claims, store = counted()
    held = claims.claim(PATH, now=T0, lease=LEASE)
    again = claims.claim(PATH, now=T0 + timedelta(seconds=1), lease=LEASE)
    assert again.state is ClaimState.BUSY and again.record["holder"] == held.holder
    assert ops(store)["transaction"] == 1 and ops(store)["create"] == 2
    later = claims.claim(PATH, now=T0 + LEASE + timedelta(seconds=1), lease=LEASE)
    assert later.state is ClaimState.ACQUIRED and later.took_over and later.attempts == 2


def test_a_completion_within_the_slack_of_its_lease_checks_the_holder():
    claims, store = counted()
    stale = claims.claim(PATH, now=T0, lease=LEASE)
    # the lease lapsed; another delivery took the claim over
    current = claims.claim(PATH, now=T0 + LEASE + timedelta(seconds=1), lease=LEASE)
    assert current.took_over
    before = ops(store).get("transaction", 0)
    # the stale holder's lease ends before now + slack: its completion must be checked
    late = claims.complete(
        PATH,
        now=T0 + LEASE - CLAIM_WAIT_SLACK,
        result={"outcome": "stale"},
        holder=stale.holder,
        held_until=stale.record["lease_until"],
    )
    assert late is False and ops(store)["transaction"] == before + 1
    stored = store.get(PATH)
    assert stored is not None and stored["holder"] == current.holder and stored["status"] == "in_progress"
