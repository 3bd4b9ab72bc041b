"""The soak run: turns in, chaos around them, every reply and effect counted.

* **Turns**: signed HTTP-channel webhooks (``infra.webhook_sender``) with at most
  ``concurrency`` turns in flight (sent, not yet answered); a provider's retry (same event,
  up to ``SEND_TRIES``) when ingress does not answer 2xx.
* **Redeliveries**: the same webhook sent again a moment later (rate ``redelivery_rate``);
  ingress must take it as a duplicate.
* **Kills**: with probability ``kill_rate`` per turn sent, a random chained layer is
  SIGKILLed (its whole process group: arbiter and workers, mid-turn) and started again as
  ``charter local restart --kill`` does. Recovery time of a kill: until every turn that
  was in flight when it happened is answered.
* **LLM faults**: the fake Anthropic server's scenario (``infra.soak.plan``).

Counted at the end: replies per turn at the fake channel server (the HTTP channel's body
names the turn and the reply's Idempotency-Key: a reply under a second key is a duplicate; the
same key again is a resend, which the plain-HTTP receiver drops by its key), ChatWork task creations at the fake ChatWork server and memories in
Firestore per turn tag (duplicate effects), dead letters (the observer's failure records).
"""

from __future__ import annotations

import contextlib
import json
import queue
import random
import statistics
import threading
import time
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infra import local_stack
from infra.soak.plan import PlannedTurn, plan, scenario
from infra.webhook_sender import send

ORG = "demo"
KILL_LAYERS = ("context", "brain", "guardian", "authorizer", "executor", "responder")
SEND_TRIES = 6
DEGRADED_CODES = ("api_timeout", "rate_limit", "llm_unavailable", "execution_error", "layer_failed")


@dataclass(frozen=True)
class Options:
    turns: int
    kill_rate: float
    llm_fault_rate: float
    redelivery_rate: float
    seed: int = 1
    concurrency: int = 8
    conversations: int | None = None
    turn_timeout: float = 180.0  # a turn unanswered this long after it was accepted is lost
    timeout: float = 1800.0  # the whole run, sends and settling


@dataclass
class TurnState:
    planned: PlannedTurn
    turn_id: str | None = None
    accepted_at: float | None = None
    answered_at: float | None = None
    replies: list[str] = field(default_factory=list)
    reply_keys: list[str] = field(default_factory=list)  # the Idempotency-Key of each reply
    send_attempts: int = 0
    given_up: bool = False  # never accepted by ingress
    released: bool = False
    redelivery_turn_ids: list[str] = field(default_factory=list)  # a redelivery taken as a new turn


@dataclass
class Kill:
    layer: str
    at: float
    workers: list[int]
    in_flight: list[int]
    restart_seconds: float | None = None
    error: str | None = None


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as resp:
        return json.loads(resp.read() or b"null")


def _post(url: str, body: str) -> None:
    request = urllib.request.Request(url, data=body.encode(), method="POST")
    with urllib.request.urlopen(request, timeout=30):
        pass


class Soak:
    def __init__(self, options: Options, state: dict[str, Any], root: Path) -> None:
        self.o, self.state, self.root = options, state, root
        comps = state["components"]
        self.ingress = str(state["ingress_url"])
        self.channels_url = comps["fake_channels"]["url"]
        self.llm_url = comps["fake_llm"]["url"]
        self.chatwork_url = comps.get("fake_chatwork", {}).get("url")
        self.turns = [
            TurnState(p)
            for p in plan(
                options.turns,
                llm_fault_rate=options.llm_fault_rate,
                redelivery_rate=options.redelivery_rate,
                seed=options.seed,
                conversations=options.conversations,
            )
        ]
        self.by_id: dict[str, TurnState] = {}
        self.foreign_replies = 0
        self.kills: list[Kill] = []
        self.redeliveries = 0
        self.lock = threading.Lock()
        self.slots = threading.Semaphore(options.concurrency)
        self.done = threading.Event()
        self.kill_queue: queue.Queue[tuple[float, str] | None] = queue.Queue()
        self.rng = random.Random(options.seed + 1)
        self.started = time.monotonic()
        self.deadline = self.started + options.timeout
        self._seen = 0

    # -- the run ------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        _post(self.llm_url + "/_admin/scenario", scenario([t.planned for t in self.turns]))
        watcher = threading.Thread(target=self._watch, name="soak-watch", daemon=True)
        chaos = threading.Thread(target=self._chaos, name="soak-chaos", daemon=True)
        watcher.start()
        chaos.start()
        try:
            with ThreadPoolExecutor(
                max_workers=self.o.concurrency + 2, thread_name_prefix="soak-send"
            ) as pool:
                for ts in self.turns:
                    while not self.slots.acquire(timeout=1.0):
                        if time.monotonic() > self.deadline:
                            break
                    if time.monotonic() > self.deadline:
                        break
                    pool.submit(self._send, ts)
                    if self.rng.random() < self.o.kill_rate:
                        self.kill_queue.put(
                            (time.monotonic() + self.rng.uniform(0.2, 2.0), self.rng.choice(KILL_LAYERS))
                        )
            self.kill_queue.put(None)
            chaos.join(timeout=max(0.0, self.deadline - time.monotonic()) + 120)
            self._settle()
        finally:
            self.done.set()
            watcher.join(timeout=30)
            with contextlib.suppress(OSError):  # a stack stopped under us (SIGTERM) has nothing to reset
                _post(self.llm_url + "/_admin/scenario", json.dumps({"rules": []}))
        return self.report()

    def _send(self, ts: TurnState) -> None:
        p = ts.planned
        for attempt in range(SEND_TRIES):
            ts.send_attempts += 1
            try:
                resp = send(
                    self.ingress, "http", p.text, org=ORG, room=p.room, user=p.user, event_id=p.event_id
                )
            except Exception:  # connection refused or reset: the provider tries again
                resp = None
            if resp is not None and 200 <= resp.status < 300:
                ids = resp.body.get("turn_ids", []) if isinstance(resp.body, dict) else []
                with self.lock:
                    ts.accepted_at = time.monotonic()
                    ts.turn_id = ids[0] if ids else None
                    if ts.turn_id:
                        self.by_id[ts.turn_id] = ts
                if p.redeliver:
                    threading.Timer(self.rng.uniform(0.0, 3.0), self._redeliver, args=(ts,)).start()
                if ts.turn_id is None:  # a duplicate of an earlier attempt that was accepted after all
                    self._release(ts)
                return
            time.sleep(min(8.0, 0.5 * 2**attempt))
        ts.given_up = True
        self._release(ts)

    def _redeliver(self, ts: TurnState) -> None:
        p = ts.planned
        try:
            resp = send(self.ingress, "http", p.text, org=ORG, room=p.room, user=p.user, event_id=p.event_id)
        except Exception:
            return
        with self.lock:
            self.redeliveries += 1
            if isinstance(resp.body, dict):
                ts.redelivery_turn_ids.extend(resp.body.get("turn_ids", []))

    def _release(self, ts: TurnState) -> None:
        with self.lock:
            if ts.released:
                return
            ts.released = True
        self.slots.release()

    # -- observing --------------------------------------------------------------------------
    def _watch(self) -> None:
        while not self.done.is_set():
            with contextlib.suppress(OSError):  # the fake channel server is local: try again soon
                self._poll_replies()
            now = time.monotonic()
            for ts in self.turns:
                if (
                    ts.accepted_at is not None
                    and ts.answered_at is None
                    and now - ts.accepted_at > self.o.turn_timeout
                ):
                    self._release(ts)
            self.done.wait(0.5)

    def _poll_replies(self) -> None:
        sent = _get(self.channels_url + "/_admin/sent?channel=http&accepted=1")
        fresh, self._seen = sent[self._seen :], len(sent)
        now = time.monotonic()
        for call in fresh:
            body = call.get("body") if isinstance(call.get("body"), dict) else {}
            if int(body.get("part", 1)) != 1:
                continue
            turn_id = str(body.get("turn_id", "")).rsplit("-", 1)[0]
            with self.lock:
                ts = self.by_id.get(turn_id)
                if ts is None:
                    self.foreign_replies += 1
                    continue
                ts.replies.append(str(call.get("text", "")))
                ts.reply_keys.append(str(body.get("idempotency_key", "")))
                if ts.answered_at is None:
                    ts.answered_at = now
            self._release(ts)

    def _settle(self) -> None:
        """Wait until every accepted turn is answered (or lost), then a little for late duplicates."""
        last = max((t.accepted_at or 0.0) for t in self.turns) if self.turns else time.monotonic()
        end = min(self.deadline, last + self.o.turn_timeout)
        while time.monotonic() < end:
            with self.lock:
                open_ = [t for t in self.turns if t.accepted_at is not None and t.answered_at is None]
            if not open_:
                break
            time.sleep(1.0)
        time.sleep(5.0)
        self._poll_replies()

    # -- chaos ------------------------------------------------------------------------------
    def _chaos(self) -> None:
        while True:
            item = self.kill_queue.get()
            if item is None or time.monotonic() > self.deadline:
                return
            at, layer = item
            time.sleep(max(0.0, at - time.monotonic()))
            comp = local_stack.load_state(self.root)["components"][layer]
            with self.lock:
                in_flight = [t.planned.index for t in self.turns if t.accepted_at and t.answered_at is None]
            kill = Kill(
                layer=layer, at=time.monotonic(), workers=local_stack.workers(comp), in_flight=in_flight
            )
            try:
                local_stack.restart(layer, root=self.root, hard=True)
                kill.restart_seconds = round(time.monotonic() - kill.at, 2)
            except Exception as exc:  # reported: a layer that does not come back fails the run
                kill.error = f"{type(exc).__name__}: {exc}"
            self.kills.append(kill)

    # -- counting ---------------------------------------------------------------------------
    def effects(self) -> dict[str, Counter[str]]:
        """Effects per turn tag: ChatWork task creations, memories, store tasks."""
        from shared_lib.adapters.firestore_store import FirestoreStore

        tags = [t.planned.tag for t in self.turns]
        found: dict[str, Counter[str]] = {"tasks": Counter(), "memories": Counter()}

        def count(kind: str, text: str) -> None:
            for tag in tags:
                if tag in text:
                    found[kind][tag] += 1

        if self.chatwork_url:
            for call in _get(self.chatwork_url + "/_admin/calls"):
                if call.get("method") == "POST" and call.get("effect"):
                    count("tasks", str((call.get("form") or {}).get("body", "")))
        store = FirestoreStore(project=self.state["project"])
        for _, doc in store.query(f"orgs/{ORG}/tasks"):
            count("tasks", str(doc.get("body", "")))
        for _, doc in store.query(f"orgs/{ORG}/memories"):
            count("memories", str(doc.get("content", "")))
        return found

    def dead_letters(self) -> int:
        from shared_lib.adapters.firestore_store import FirestoreStore

        ours = set(self.by_id)
        store = FirestoreStore(project=self.state["project"])
        return sum(1 for _, doc in store.query(f"orgs/{ORG}/failures") if doc.get("turn_id") in ours)

    def report(self) -> dict[str, Any]:
        from shared_lib.persona import load_persona

        persona = load_persona()
        degraded_texts = {persona.message(code) for code in DEGRADED_CODES if persona.has(code)}
        accepted = [t for t in self.turns if t.turn_id]
        answered = [t for t in accepted if t.replies]
        lost = [t for t in accepted if not t.replies]
        effects = self.effects()
        duplicate_effects = sum(n - 1 for c in effects.values() for n in c.values() if n > 1)
        latencies = sorted(t.answered_at - t.accepted_at for t in answered if t.answered_at and t.accepted_at)
        answered_at = {t.planned.index: t.answered_at for t in self.turns}
        kills = []
        for k in self.kills:
            ends = [answered_at.get(i) for i in k.in_flight]
            recovered = None if any(e is None for e in ends) else round(max([k.at, *ends]) - k.at, 2)  # type: ignore[type-var]
            kills.append(
                {
                    "layer": k.layer,
                    "at_seconds": round(k.at - self.started, 2),
                    "workers": k.workers,
                    "turns_in_flight": len(k.in_flight),
                    "restart_seconds": k.restart_seconds,
                    "recovery_seconds": recovered,
                    "error": k.error,
                }
            )
        recoveries = [k["recovery_seconds"] for k in kills if k["recovery_seconds"] is not None]
        result = {
            "turns": len(self.turns),
            "accepted": len(accepted),
            "unaccepted": sum(1 for t in self.turns if t.given_up),
            "replies": len(answered),
            "degraded_replies": sum(1 for t in answered if t.replies[0] in degraded_texts),
            "lost": len(lost),
            "lost_turns": [t.turn_id for t in lost][:20],
            # a reply under a key of its own: a receiver that dedupes by Idempotency-Key shows it too
            "duplicate_replies": sum(len(set(t.reply_keys)) - 1 for t in answered),
            # the same reply sent again under the same key (a responder killed between its send
            # and its send receipt): the plain-HTTP contract has the receiver drop it by the key
            "resent_replies": sum(len(t.reply_keys) - len(set(t.reply_keys)) for t in answered),
            "repeated_reply_turns": [
                {"turn_id": t.turn_id, "keys": t.reply_keys, "texts": [r[:60] for r in t.replies]}
                for t in answered
                if len(t.replies) > 1
            ][:20],
            "duplicate_turns": sum(len(t.redelivery_turn_ids) for t in self.turns),
            "foreign_replies": self.foreign_replies,
            "duplicate_effects": duplicate_effects,
            "effects": {kind: sum(c.values()) for kind, c in effects.items()},
            "effect_turns": sum(1 for t in accepted if t.planned.effect),
            # answered, not degraded, yet no effect found: a reply that claims what did not happen
            "missing_effects": [
                t.replies[0][:80]
                for t in answered
                if t.planned.effect
                and t.replies[0] not in degraded_texts
                and not effects["tasks" if t.planned.effect == "task" else "memories"][t.planned.tag]
            ][:10],
            "dead_letters": self.dead_letters(),
            "llm_faults": Counter(t.planned.fault for t in self.turns if t.planned.fault),
            "redeliveries": self.redeliveries,
            "kills": len(kills),
            "kill_errors": sum(1 for k in kills if k["error"]),
            "recovery_seconds": {
                "max": max(recoveries, default=None),
                "median": statistics.median(recoveries) if recoveries else None,
            },
            "restart_seconds_max": max((k["restart_seconds"] or 0 for k in kills), default=None),
            "latency_seconds": _quantiles(latencies),
            "duration_seconds": round(time.monotonic() - self.started, 1),
            "kill_log": kills,
        }
        result["ok"] = (
            result["lost"] == 0
            and result["unaccepted"] == 0
            and result["duplicate_replies"] == 0
            and result["duplicate_turns"] == 0
            and result["duplicate_effects"] == 0
            and result["kill_errors"] == 0
        )
        return result


def _quantiles(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "p95": None, "max": None}
    pick = lambda q: round(values[min(len(values) - 1, int(q * len(values)))], 2)  # noqa: E731
    return {"p50": pick(0.5), "p95": pick(0.95), "max": round(values[-1], 2)}
