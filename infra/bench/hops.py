"""Round trips per hop: what each layer asks of Firestore and Pub/Sub for one turn of the mix.

The burst's mix (``infra.bench.burst.MIX``, with its confirmations) runs in-process over the
same code the functions run, with a store and a bus that count: per target (the function
that handled the delivery; ``ingress`` for the webhook's own work), store operations by
kind and the Firestore RPCs they cost (a read, a batched read of known documents, a write, a
batch of writes, a query: one RPC each; a transaction: begin and commit, plus the reads inside
it), publishes and their bytes; the reply path's targets apart from the background's.
Counts, not times: the same on every machine, so they explain the burst's CPU per hop.

    python -m infra.bench.hops [--json]
"""

from __future__ import annotations

import argparse
import contextvars
import json
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from shared_lib.cli.runner import progress
from shared_lib.features.finetune.state.config import OPT_IN_CACHE as opt_in_cache
from shared_lib.features.skills import store as skills_store
from shared_lib.flags import FLAGS_DOC, flags_store_doc, load_flags_file
from shared_lib.ports import Doc, Store, Transaction

_target: contextvars.ContextVar[str] = contextvars.ContextVar("bench_target", default="ingress")
# Firestore RPCs of one store operation (a transaction's reads are counted as reads)
RPCS = {
    "get": 1,
    "get_many": 1,
    "set": 1,
    "set_many": 1,
    "create": 1,
    "delete": 1,
    "query": 1,
    "transaction": 2,
}
# the LLM peers' health (shared_lib.peers.health): read once per cache period and probed once
# per interval, whatever the turns; counted apart ("periodic"), not against a hop
PERIODIC = ("peer_health", "peer_probe_leases")
# The targets a reply waits for; the others (observer, memory, the shadow brain) work beside or after it
REPLY_PATH = ("ingress", "context", "brain", "guardian", "authorizer", "executor", "responder")
# How far the caches' virtual clock moves a turn: about what a turn of the mix takes in process.
PACE_SECONDS = 0.5


class VirtualClock:
    """A monotonic clock that moves only when told (``advance``)."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class CountingStore:
    """A ``Store`` that counts each operation against the target handling the delivery."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.ops: defaultdict[str, Counter[str]] = defaultdict(Counter)
        self.periodic: Counter[str] = Counter()

    def _count(self, op: str, path: str = "") -> None:
        if path.split("/", 1)[0] in PERIODIC:
            self.periodic[op] += 1
        else:
            self.ops[_target.get()][op] += 1

    def get(self, path: str) -> Doc | None:
        self._count("get", path)
        return self.inner.get(path)

    def get_many(self, paths: Any) -> dict[str, Doc | None]:
        self._count("get_many", paths[0] if paths else "")  # one BatchGetDocuments call
        return self.inner.get_many(paths)

    def set(self, path: str, data: Doc, *, merge: bool = False) -> None:
        self._count("set", path)
        self.inner.set(path, data, merge=merge)

    def set_many(self, writes: Any) -> None:
        self._count("set_many", writes[0][0] if writes else "")  # one Commit of a WriteBatch
        self.inner.set_many(writes)

    def create(self, path: str, data: Doc) -> bool:
        self._count("create", path)
        return self.inner.create(path, data)

    def delete(self, path: str) -> None:
        self._count("delete", path)
        self.inner.delete(path)

    def query(self, collection: str, **kw: Any) -> Any:
        self._count("query", collection)
        return self.inner.query(collection, **kw)

    def run_transaction(self, fn: Callable[[Transaction], Any]) -> Any:
        self._count("transaction")
        store = self

        def counted(txn: Transaction) -> Any:
            class _Txn:
                def get(self, path: str) -> Doc | None:
                    store._count("get")
                    return txn.get(path)

                def get_many(self, paths: Any) -> dict[str, Doc | None]:
                    store._count("get_many")  # one BatchGetDocuments within the transaction
                    return txn.get_many(paths)  # type: ignore[attr-defined,no-any-return]

                def __getattr__(self, name: str) -> Any:  # writes ride on the commit
                    return getattr(txn, name)

            return fn(_Txn())  # type: ignore[arg-type]

        return self.inner.run_transaction(counted)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def count(turns: int = 0) -> dict[str, Any]:
    """Run the mix once (or ``turns`` turns of it) in-process and count per target."""
    from infra.bench.burst import MIX
    from infra.fake_llm.server import FakeAnthropicServer
    from shared_lib.adapters.memory_store import MemoryStore
    from shared_lib.delivery.topology import TOPOLOGY
    from shared_lib.demo_data import DEMO_ORG, seed_demo_directory
    from shared_lib.layers.ingress import accept
    from shared_lib.turn.inbound import InboundMessage
    from shared_lib.wiring.composition import build_runtime, runner

    texts = [t for _, text, confirmations in MIX for t in [text] + ["はい"] * confirmations]
    texts = texts if not turns else [texts[i % len(texts)] for i in range(turns)]
    store = CountingStore(MemoryStore())
    published: defaultdict[str, Counter[str]] = defaultdict(Counter)
    with FakeAnthropicServer() as server:
        env = {
            "CHARTER_ENV": "test",
            "CHARTER_CHANNELS": "recording",
            "ANTHROPIC_BASE_URL": server.url,
            "ANTHROPIC_API_KEY": "bench",
        }
        rt = build_runtime(env, store=store)  # type: ignore[arg-type]
        # The per-process caches (flags, skills, directory people, the fine-tuning opt-in) run on a virtual clock that
        # moves PACE_SECONDS a turn: what they cost per turn is then the same on a busy machine
        # as on a quiet one (their refresh is a cost per interval, not per turn).
        virtual = VirtualClock()
        rt.flags.monotonic = virtual
        rt.people.monotonic = virtual
        rt.intake.monotonic = virtual
        rt.context_builder.lists.monotonic = virtual
        skills_store.cache_clock, real_clock = virtual, skills_store.cache_clock
        opt_in_cache.clock, real_opt_in_clock = virtual, opt_in_cache.clock
        bus = rt.bus
        publish = bus.publish

        def counted_publish(topic: str, data: bytes, attrs: dict[str, str], ordering_key: str = "") -> str:
            published[_target.get()]["publishes"] += 1
            published[_target.get()]["bytes"] += len(data)
            return publish(topic, data, attrs, ordering_key)

        bus.publish = counted_publish  # type: ignore[method-assign]
        for name, sub in TOPOLOGY.all_subscriptions.items():
            handler = runner(rt, sub.target).handle

            def as_target(data: bytes, attrs: dict[str, str], _h: Any = handler, _t: str = sub.target) -> str:
                token = _target.set(_t)
                try:
                    return str(_h(data, attrs))
                finally:
                    _target.reset(token)

            bus.subscribe(  # type: ignore[attr-defined]
                sub.topic, as_target, name=name, dead_letter=sub.dead_letter, filter_expr=sub.filter
            )
        seed_demo_directory(store)  # type: ignore[arg-type]
        # Self-critique is a sampled extra (the flags' ``self_critique_rate``, 0.2 in dev and stg),
        # drawn on the random turn id: counted, it moved the brain by a call-log write a draw and the
        # mix's totals by ±0.4 between runs. The count pins it off so a budget holds without draws;
        # its cost is named apart (infra/bench/README.md: one more LLM call and its log write in the
        # brain per critiqued turn).
        flags = load_flags_file().model_copy(update={"self_critique_rate": 0.0})
        store.inner.set(FLAGS_DOC, flags_store_doc(flags))
        store.ops.clear()
        for i, text in enumerate(texts):
            virtual.advance(PACE_SECONDS)
            accept(
                rt,
                InboundMessage(
                    channel="http",
                    org_id=DEMO_ORG,
                    room_id="bench-hops",
                    user_id="u-suzuki",
                    text=text,
                    message_id=f"m{i}",
                    event_id=f"hops-{time.time_ns()}-{i}",
                    received_at=datetime.now(UTC),
                ),
            )
        skills_store.cache_clock = real_clock
        opt_in_cache.clock = real_opt_in_clock
    n = len(texts)
    targets = sorted(set(store.ops) | set(published), key=lambda t: (t != "ingress", t))
    per: dict[str, dict[str, float]] = {}
    for target in targets:
        ops = store.ops[target]
        row = {op: round(c / n, 2) for op, c in sorted(ops.items())}
        row["firestore_rpcs"] = round(sum(RPCS[op] * c for op, c in ops.items()) / n, 2)
        row["publishes"] = round(published[target]["publishes"] / n, 2)
        row["published_bytes"] = round(published[target]["bytes"] / max(1, published[target]["publishes"]))
        per[target] = row
    reply = sum(r["firestore_rpcs"] for t, r in per.items() if t in REPLY_PATH)
    return {
        "turns": n,
        "per_turn": per,
        "firestore_rpcs_per_turn": round(sum(r["firestore_rpcs"] for r in per.values()), 1),
        "reply_path_rpcs_per_turn": round(reply, 1),
        "background_rpcs_per_turn": round(sum(r["firestore_rpcs"] for r in per.values()) - reply, 1),
        "publishes_per_turn": round(sum(r["publishes"] for r in per.values()), 1),
        "periodic": dict(store.periodic),  # the peers' health, per interval rather than per turn
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m infra.bench.hops", description=__doc__.split("\n")[0])
    p.add_argument("--turns", type=int, default=0, help="turns of the mix (default: the mix once)")
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    progress(f"counting the store and bus operations of {a.turns or 'the mix once, its'} turns…")
    report = count(a.turns)
    if a.json:
        print(json.dumps(report, ensure_ascii=False))
        return 0
    print(f"per turn, averaged over {report['turns']} turns of the mix")
    print(
        f"{'target':13} {'rpcs':>6} {'get':>5} {'batch':>5} {'set':>5} {'create':>6} {'query':>5} {'txn':>5}"
        f" {'pub':>4} {'bytes':>6}"
    )
    for target, row in report["per_turn"].items():
        print(
            f"{target:13} {row['firestore_rpcs']:6.2f} {row.get('get', 0):5.2f} {row.get('get_many', 0) + row.get('set_many', 0):5.2f}"
            f" {row.get('set', 0):5.2f}"
            f" {row.get('create', 0):6.2f} {row.get('query', 0):5.2f} {row.get('transaction', 0):5.2f}"
            f" {row['publishes']:4.2f} {row['published_bytes']:6d}"
        )
    print(
        f"total: {report['firestore_rpcs_per_turn']} Firestore RPCs, {report['publishes_per_turn']} publishes a turn"
    )
    print(
        f"reply path (ingress … responder): {report['reply_path_rpcs_per_turn']},"
        f" background (observer, memory, shadow brain): {report['background_rpcs_per_turn']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
