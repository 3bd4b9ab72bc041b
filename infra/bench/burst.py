"""Burst benchmark: production-like webhook traffic through the whole local stack, against the floor.

N signed webhooks over K conversations from C concurrent senders, a realistic mix of turns
(greetings, task creation with result phrasing, task listing, memories, small talk, and an
announcement that asks twice for confirmation, each 「はい」 sent once its question arrived,
as a person would), through every layer on the emulators with the fake LLM answering at once.
The bare chain floor (``shared/bench/chain_floor``) runs its burst with the same N and K in
the same run. Prints:

* turns/s of the product and of the floor, and their ratio (target ≥ 0.7);
* ingress acknowledgement median and p99 during the burst (target p99 ≤ 300 ms);
* end-to-end turn latency (webhook sent → reply at the fake channel API) median and p95;
* lost turns, duplicate replies, duplicate effects (target 0 each);
* memory of each function: ``rss_mib``, VmRSS summed over its gunicorn arbiter and workers (each
  worker's pages shared with the arbiter counted again: the arbiter imported the entry module
  before the fork); ``memory_mib``, what an instance of it holds (``instance_pss``: the tree's
  proportional set size, shared pages counted once) and its largest worker's own VmRSS
  (``worker_rss``);
* with ``--sequential M``: the same mix one turn at a time, against the floor's sequential
  latency (target ≤ 1.3×).

Bounded: every wait has a deadline; the stack and the floor are stopped by pid.

    python -m infra.bench.burst --turns 120 --conversations 20 --senders 16 \\
        --floor ../shared/bench/chain_floor --sequential 20 [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from infra import local_stack
from infra.webhook_sender import build_request
from shared_lib.cli.runner import progress
from shared_lib.settings import Settings

ORG = "demo"
USERS = ("u-suzuki",)
# (kind, text, confirmations the text is expected to need)
MIX: tuple[tuple[str, str, int], ...] = (
    ("greeting", "こんにちは", 0),
    ("task_create", "田中さんに明日までに見積書を作成するタスクをお願いできる？", 0),
    ("small_talk", "今日は暑いね〜", 0),
    ("task_search", "田中さんのタスクの一覧を教えて", 0),
    ("memory", "覚えておいて：私はコーヒーはブラック派", 0),
    ("announce", "全員に明日の全体会議は10時からとアナウンスして", 2),
)
NOT_FUNCTIONS = ("pubsub", "firestore", "fake_llm", "fake_channels")
WRITE_TOOLS = {"chatwork_task_create": "tasks", "save_memory": "memories", "announce": "announcements"}


def _turn_of(call: dict[str, Any]) -> str:
    """The turn a reply answers: the plain-HTTP reply names ``{turn_id}-{step}``."""
    body = call.get("body")
    key = str(body.get("turn_id") or "") if isinstance(body, dict) else ""
    return key.rsplit("-", 1)[0]


def _ts(iso: str) -> float:
    return datetime.fromisoformat(iso).timestamp()


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return (
        round(ordered[min(len(ordered) - 1, max(0, round(len(ordered) * q) - 1))], 1)
        if ordered
        else float("nan")
    )


@dataclass
class Sent:
    conversation: str
    kind: str
    text: str
    at: float
    ack_ms: float
    status: int
    turn_ids: list[str] = field(default_factory=list)


class Stack:
    """The running local stack: sends webhooks, reads replies at the fake channel API."""

    def __init__(self, state: dict[str, Any]) -> None:
        self.state = state
        self.ingress = state["ingress_url"]
        self.channels = state["components"]["fake_channels"]["url"]
        self.client = httpx.Client(timeout=30, limits=httpx.Limits(max_connections=64))
        self.lock = threading.Lock()
        self.sent: list[Sent] = []
        # the replies read so far, and by turn: each poll asks only for what came since (the floor's
        # harness is told of an arrival; this one must not spend the machine re-reading every reply)
        self._read_lock = threading.Lock()
        self._replies: list[dict[str, Any]] = []
        self._by_turn: dict[str, dict[str, Any]] = {}

    def send(self, conversation: str, kind: str, text: str, user: str) -> Sent:
        path, headers, body = build_request("http", text, org=ORG, room=conversation, user=user)
        t0 = time.perf_counter()
        wall = time.time()
        response = self.client.post(self.ingress + path, content=body, headers=headers)
        ack = (time.perf_counter() - t0) * 1000
        answer = (
            response.json() if response.headers.get("content-type", "").startswith("application/json") else {}
        )
        record = Sent(
            conversation, kind, text, wall, ack, response.status_code, list(answer.get("turn_ids") or [])
        )
        with self.lock:
            self.sent.append(record)
        return record

    def replies(self) -> list[dict[str, Any]]:
        """Every reply the fake channel API received, oldest first (read since the last poll)."""
        with self._read_lock:
            params: dict[str, str | int] = {"channel": "http", "since": len(self._replies)}
            new = list(self.client.get(f"{self.channels}/_admin/sent", params=params).json())
            self._replies.extend(new)
            for call in new:
                self._by_turn.setdefault(_turn_of(call), call)
            return list(self._replies)

    def reply_to(self, turn_id: str, deadline: float) -> dict[str, Any] | None:
        while time.time() < deadline:
            self.replies()  # only what came since the last read
            with self._read_lock:
                found = self._by_turn.get(turn_id)
            if found is not None:
                return found
            time.sleep(0.1)
        return None


def conversation_script(turns_each: int) -> list[tuple[str, str, int]]:
    return [MIX[i % len(MIX)] for i in range(turns_each)]


def run_conversation(stack: Stack, conversation: str, script: list[tuple[str, str, int]], user: str) -> None:
    for kind, text, confirmations in script:
        sent = stack.send(conversation, kind, text, user)
        for _ in range(confirmations):
            # a person reads the question before answering 「はい」
            if not sent.turn_ids or stack.reply_to(sent.turn_ids[0], time.time() + 60) is None:
                break
            sent = stack.send(conversation, "confirm", "はい", user)


def burst(stack: Stack, turns: int, conversations: int, senders: int) -> dict[str, Any]:
    per = max(1, turns // conversations)
    run_id = uuid.uuid4().hex[:6]
    names = [f"burst-{run_id}-{i}" for i in range(conversations)]
    start = time.time()
    with ThreadPoolExecutor(max_workers=senders) as pool:
        for i, name in enumerate(names):
            pool.submit(run_conversation, stack, name, conversation_script(per), USERS[i % len(USERS)])
    return settle(stack, [s for s in stack.sent if s.conversation in names], start)


def sequential(stack: Stack, turns: int) -> list[float]:
    latencies = []
    name = f"seq-{uuid.uuid4().hex[:6]}"
    for kind, text, _ in conversation_script(turns):
        sent = stack.send(name, kind, text, USERS[0])
        reply = stack.reply_to(sent.turn_ids[0], time.time() + 60) if sent.turn_ids else None
        if reply is not None:
            latencies.append((_ts(reply["at"]) - sent.at) * 1000)
    return latencies


def settle(stack: Stack, sent: list[Sent], start: float, timeout: float = 240.0) -> dict[str, Any]:
    """Wait for every accepted turn's reply (bounded), then count what arrived."""
    turn_ids = [t for s in sent for t in s.turn_ids]
    deadline = time.time() + timeout
    while time.time() < deadline:
        replies = stack.replies()
        got = {_turn_of(c) for c in replies if c.get("status", 200) < 300}
        if set(turn_ids) <= got:
            break
        time.sleep(0.5)
    replies = stack.replies()
    delivered = [c for c in replies if c.get("status", 200) < 300]
    first: dict[str, float] = {}
    per_turn: Counter[str] = Counter()
    for call in delivered:
        turn_id, key = _turn_of(call), (call.get("body") or {}).get("idempotency_key")
        if turn_id in turn_ids:
            per_turn[str(key)] += 1
            first.setdefault(str(turn_id), _ts(call["at"]))
    sent_at = {t: s.at for s in sent for t in s.turn_ids}
    e2e = [(first[t] - sent_at[t]) * 1000 for t in turn_ids if t in first]
    end = max(first.values()) if first else float("nan")
    acks = [s.ack_ms for s in sent]
    return {
        "webhooks": len(sent),
        "accepted_turns": len(turn_ids),
        "rejected_webhooks": sum(1 for s in sent if s.status >= 300),
        "replied_turns": len(first),
        "lost_turns": len(set(turn_ids) - set(first)),
        "duplicate_replies": sum(n - 1 for n in per_turn.values() if n > 1),
        "turns_per_s": round(len(first) / (end - start), 2) if first else 0.0,
        "ack_median_ms": pct(acks, 0.5),
        "ack_p99_ms": pct(acks, 0.99),
        "e2e_median_ms": pct(e2e, 0.5),
        "e2e_p95_ms": pct(e2e, 0.95),
        "kinds": dict(Counter(s.kind for s in sent)),
    }


def effect_counts(state: dict[str, Any]) -> dict[str, tuple[int, int]]:
    """Per write tool: (effect documents, completed receipts of that tool) in the store now."""
    from shared_lib import collections
    from shared_lib.wiring.composition import operator_runtime

    store = operator_runtime(
        store="firestore", project=state["project"], home=Path(state["root"]).parent
    ).store
    receipts = Counter(
        str(doc.get("tool"))
        for _, doc in store.query(collections.collection_path("receipts", org=ORG))
        if doc.get("status") == "done"
    )
    return {
        name: (len(store.query(collections.collection_path(name, org=ORG))), receipts[tool])
        for tool, name in WRITE_TOOLS.items()
    }


def duplicate_effects(
    before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]
) -> dict[str, int]:
    """Effect documents the run added beyond one per completed receipt it added (0 = none).

    A write tool's effect and its receipt commit in one transaction, so each new effect
    document has exactly one new ``done`` receipt; an effect repeated by a redelivery would
    show as more new documents than new receipts.
    """
    # fewer new documents than receipts is no duplicate: a memory of the same key is updated in place
    return {
        name: max(0, (after[name][0] - before[name][0]) - (after[name][1] - before[name][1]))
        for name in after
    }


def resident_memory(state: dict[str, Any]) -> dict[str, float]:
    """MiB resident per function target: its process and every descendant (gunicorn workers)."""
    out = {}
    for name, comp in state["components"].items():
        if name in NOT_FUNCTIONS:
            continue
        out[name] = round(sum(_rss_kib(pid) for pid in _tree(int(comp["pid"]))) / 1024, 1)
    return out


def instance_memory(state: dict[str, Any]) -> dict[str, dict[str, float]]:
    """MiB per function target: the proportional set size of its process tree (what its
    instance holds, a page shared between the arbiter and its worker counted once) and the
    VmRSS of its largest worker (the process the stage runs in)."""
    out = {}
    for name, comp in state["components"].items():
        if name in NOT_FUNCTIONS:
            continue
        root = int(comp["pid"])
        workers = [p for p in _tree(root) if p != root] or [root]
        out[name] = {
            "instance_pss": round(sum(_pss_kib(pid) for pid in _tree(root)) / 1024, 1),
            "worker_rss": round(max(_rss_kib(pid) for pid in workers) / 1024, 1),
        }
    return out


def _pss_kib(pid: int) -> int:
    return _proc_kib(pid, "smaps_rollup", "Pss:")


def cpu_seconds(state: dict[str, Any]) -> dict[str, float]:
    """CPU seconds (user + system) used so far by each component's process tree, and the bench's own."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {
        name: sum(_cpu_ticks(pid) for pid in _tree(int(comp["pid"]))) / tick
        for name, comp in state["components"].items()
    }
    own = os.times()
    out["bench (senders)"] = own.user + own.system
    return out


def cpu_per_turn(before: dict[str, float], after: dict[str, float], turns: int) -> dict[str, float]:
    """CPU milliseconds per turn each component spent during the burst, largest first."""
    spent = {name: (after[name] - before.get(name, 0.0)) * 1000 / max(1, turns) for name in after}
    return {name: round(ms, 1) for name, ms in sorted(spent.items(), key=lambda kv: -kv[1])}


def _cpu_ticks(pid: int) -> int:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)


def _tree(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        for task in Path(f"/proc/{p}/task").glob("*/children"):
            todo += [int(c) for c in task.read_text().split()]
    return found


def _rss_kib(pid: int) -> int:
    return _proc_kib(pid, "status", "VmRSS:")


def _proc_kib(pid: int, file: str, key: str) -> int:
    """The kB figure of ``key`` in ``/proc/<pid>/<file>`` (0 for a process gone)."""
    try:
        for line in Path(f"/proc/{pid}/{file}").read_text().splitlines():
            if line.startswith(key):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


class Profiler:
    """``py-spy record`` on every function's worker while the burst runs (``--profile DIR``).

    Writes ``DIR/{target}.txt`` (collapsed stacks: one line a stack, its sample count last),
    summarised by ``infra.bench.profile``. Sampling costs CPU of its own: a profiled burst's
    figures are not the benchmark's.
    """

    def __init__(self, state: dict[str, Any], directory: Path, rate: int = 50) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []
        directory.mkdir(parents=True, exist_ok=True)
        spy = str(Path(sys.executable).with_name("py-spy"))
        for name, comp in state["components"].items():
            if name in NOT_FUNCTIONS:
                continue
            for pid in local_stack.workers(comp):
                out = directory / f"{name}.txt"
                cmd = [spy, "record", "-p", str(pid), "-f", "raw", "-r", str(rate), "-o", str(out)]
                self.procs.append(
                    subprocess.Popen(
                        [*cmd, "--nonblocking"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
                    )
                )

    def stop(self) -> None:
        for proc in self.procs:
            proc.send_signal(signal.SIGINT)  # py-spy writes its file on SIGINT
        for proc in self.procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


def deployed_cadence() -> dict[str, Any]:
    """``local_stack.up``'s arguments for the cache periods a deployed function runs with: the
    flags' lifetime and the LLM peers' health interval, the settings' defaults (Terraform sets the
    health interval to the same 30 s and leaves the flags' lifetime alone). The local stack
    shortens both to 2 s for its end-to-end tests, which must see a flag flip or a peer's recovery
    within seconds; with those, every process reread the flags and every model-calling process
    raced for a probe lease of each peer every 2 s: a background load on the emulators that no
    deployed instance carries, charged to the product's turns."""
    fields = Settings.model_fields
    health = fields["peer_health_seconds"].default
    return {
        "flags_ttl": fields["flags_ttl_seconds"].default,
        "extra_env": {"CHARTER_PEER_HEALTH_SECONDS": f"{health:g}"},
    }


def renice_chain(state: dict[str, Any], niceness: int) -> list[int]:
    """Lower the CPU priority of every chained layer's processes (not the ingress, the admin
    or the emulators): on one machine, what the ingress's own Cloud Run service gives it."""
    reniced = []
    for name, comp in state["components"].items():
        if name in (*NOT_FUNCTIONS, "ingress", "admin"):
            continue
        for pid in _tree(int(comp["pid"])):
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, pid, niceness)
                reniced.append(pid)
    return reniced


def floor(directory: Path, turns: int, conversations: int, seq: int) -> dict[str, Any]:
    cmd = [sys.executable, str(directory / "run.py"), "--hops", "8", "--burst", str(turns)]
    cmd += ["--keys", str(conversations), "--seq", str(max(seq, 10))]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=True).stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m infra.bench.burst", description=__doc__.split("\n")[0])
    p.add_argument("--turns", type=int, default=120)
    p.add_argument("--conversations", type=int, default=20)
    p.add_argument("--senders", type=int, default=16)
    p.add_argument("--sequential", type=int, default=0, help="also M sequential turns of the same mix")
    p.add_argument("--floor", type=Path, help="shared/bench/chain_floor: run its burst in the same run")
    p.add_argument("--profile", type=Path, help="py-spy every function worker during the burst into DIR")
    p.add_argument(
        "--isolate-ingress",
        type=int,
        default=0,
        metavar="NICE",
        help="run the chained layers at this niceness (the ingress keeps its own CPU, as in the cloud)",
    )
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    report: dict[str, Any] = {"turns": a.turns, "conversations": a.conversations, "senders": a.senders}
    root = Path(tempfile.mkdtemp(prefix="charter-burst-")) / ".charter" / "local"
    print("starting the local stack…", file=sys.stderr)
    state = local_stack.up(root=root, progress=progress, **deployed_cadence())
    state["root"] = str(root)
    try:
        stack = Stack(state)
        run_conversation(stack, "warm-up", conversation_script(len(MIX)), USERS[0])
        stack.sent.clear()
        effects_before = effect_counts(state)
        print(
            f"burst: {a.turns} turns over {a.conversations} conversations, {a.senders} senders…",
            file=sys.stderr,
        )
        if a.isolate_ingress:
            report["isolated_ingress_niceness_of_chain"] = a.isolate_ingress
            renice_chain(state, a.isolate_ingress)
        cpu_before = cpu_seconds(state)
        profiler = Profiler(state, a.profile) if a.profile else None
        try:
            report["product"] = burst(stack, a.turns, a.conversations, a.senders)
        finally:
            if profiler:
                profiler.stop()
        report["product"]["cpu_ms_per_turn"] = cpu_per_turn(
            cpu_before, cpu_seconds(state), report["product"]["replied_turns"]
        )
        report["product"]["duplicate_effects"] = duplicate_effects(effects_before, effect_counts(state))
        report["product"]["rss_mib"] = resident_memory(state)
        report["product"]["memory_mib"] = instance_memory(state)
        if a.sequential:
            lat = sequential(stack, a.sequential)
            report["product_sequential"] = {
                "n": len(lat),
                "median_ms": pct(lat, 0.5),
                "p95_ms": pct(lat, 0.95),
            }
    finally:
        local_stack.down(root=root)
    if a.floor:
        print("floor: the bare 8-hop chain, same burst…", file=sys.stderr)
        report["floor"] = floor(a.floor, a.turns, a.conversations, a.sequential)
        product, bare = report["product"], report["floor"]
        report["ratios"] = {
            "burst_throughput_product_over_floor": round(
                product["turns_per_s"] / bare["burst_turns_per_s"], 2
            )
        }
        if a.sequential:
            report["ratios"]["sequential_latency_product_over_floor"] = round(
                report["product_sequential"]["median_ms"] / bare["seq_median_ms"], 2
            )
    print(json.dumps(report, ensure_ascii=False, indent=None if a.json else 2))
    product = report["product"]
    clean = (
        product["lost_turns"] == 0
        and product["duplicate_replies"] == 0
        and not any(product["duplicate_effects"].values())
    )
    return 0 if clean else 1


if __name__ == "__main__":
    sys.exit(main())
