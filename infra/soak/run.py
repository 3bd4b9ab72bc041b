"""The soak run: turns in, chaos around them, everything recorded for the books.

* **Turns**: signed HTTP-channel webhooks (``infra.webhook_sender``) with at most
  ``concurrency`` turns in flight (sent, not yet answered); a provider's retry (same event,
  up to ``SEND_TRIES``) when ingress does not answer 2xx. Every attempt's outcome is kept
  (``accounting.Attempt``), and at the end each planned event's dedupe record at the ingress
  names the turn it made: an attempt that timed out yet was taken is resolved by it.
* **Redeliveries**: the same webhook sent again a moment later (rate ``redelivery_rate``);
  ingress must take it as a duplicate.
* **Kills**: with probability ``kill_rate`` per turn sent, a random chained layer is
  SIGKILLed (its whole process group: arbiter and workers) and started again as ``charter
  local restart --kill`` does. The kill waits (up to ``CLAIM_WAIT``) until one of our
  unanswered turns holds its claim for that layer (``orgs/{org}/idempotency``,
  ``shared_lib.delivery.idempotency.claim_path``); a turn whose claim is still held by the same holder
  once the process is dead was hit in flight. The guardian and the authorizer hold no claim
  (issue 39): their kills wait out ``CLAIM_WAIT`` and count as misses, though a turn they were
  working on is redelivered and run again all the same. A kill's recovery time runs until every turn it
  hit is answered; a kill that hit none has none. Until one has hit, a miss is followed by a
  kill of the brain (``FOLLOW_UP``, reported as such).
* **LLM faults**: the fake LLMs' scenarios (``infra.soak.plan``), each peer its own.

Counted at the end (``accounting.books``): replies per turn at the fake channel server (the
HTTP channel's body names the turn, its room and the reply's Idempotency-Key), ChatWork task
creations at the fake ChatWork server and memories in Firestore per turn tag, dead letters
(the observer's failure records) per turn.
"""

from __future__ import annotations

import contextlib
import json
import queue
import random
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from infra import local_stack
from infra.emulators import kill_group
from infra.soak import accounting
from infra.soak.accounting import Attempt, KillRecord, Observed, Reply, TurnRecord
from infra.soak.plan import PEERS, PlannedTurn, plan, scenario
from infra.webhook_sender import send
from shared_lib.flags import FLAGS_DOC, flags_store_doc, load_flags_file

ORG = "demo"
KILL_LAYERS = ("context", "brain", "guardian", "authorizer", "executor", "responder")
SEND_TRIES = 6
CLAIM_WAIT = 30.0  # how long a kill waits for a turn to hold its layer's claim
FOLLOW_UP = "brain"  # the layer a missed kill is followed by (its claim spans the LLM calls)
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
    poison_rate: float = 0.0


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as resp:
        return json.loads(resp.read() or b"null")


def _post(url: str, body: str) -> None:
    request = urllib.request.Request(url, data=body.encode(), method="POST")
    with urllib.request.urlopen(request, timeout=30):
        pass


def hold_the_llm_arm(store: Any) -> None:
    """The stack's flags without the rollback guard: the plan's LLM faults are meant (an
    outage must end in the degraded reply, a memory request in a memory), and the guard
    answering them by rolling the organisation back to the legacy arm would change every
    later turn's expected answer. The guard has tests of its own."""
    doc = load_flags_file()
    guard = doc.rollback_guard.model_copy(update={"enabled": False})
    store.set(FLAGS_DOC, flags_store_doc(doc.model_copy(update={"rollback_guard": guard}), updated_by="soak"))


class Soak:
    def __init__(self, options: Options, state: dict[str, Any], root: Path) -> None:
        from shared_lib.adapters.firestore_store import FirestoreStore

        self.o, self.state, self.root = options, state, root
        comps = state["components"]
        self.ingress = str(state["ingress_url"])
        self.channels_url = comps["fake_channels"]["url"]
        self.llm_urls = {peer: comps[peer]["url"] for peer in PEERS if peer in comps}
        self.chatwork_url = comps.get("fake_chatwork", {}).get("url")
        self.store = FirestoreStore(project=state["project"])
        self.planned = plan(
            options.turns,
            llm_fault_rate=options.llm_fault_rate,
            redelivery_rate=options.redelivery_rate,
            seed=options.seed,
            conversations=options.conversations,
            poison_rate=options.poison_rate,
        )
        self.turns = [
            TurnRecord(
                index=p.index,
                tag=p.tag,
                room=p.room,
                effect=p.effect,
                fault=p.fault,
                must_degrade=p.must_degrade,
                poisoned=p.poison is not None,
            )
            for p in self.planned
        ]
        self.by_id: dict[str, TurnRecord] = {}
        self.replies: list[Reply] = []
        self.received = 0
        self.sent = 0
        self.kills: list[KillRecord] = []
        self.lock = threading.Lock()
        self.slots = threading.Semaphore(options.concurrency)
        self.released: set[int] = set()
        self.done = threading.Event()
        self.kill_queue: queue.Queue[tuple[float, str] | None] = queue.Queue()
        self.rng = random.Random(options.seed + 1)
        self.started = time.monotonic()
        self.deadline = self.started + options.timeout
        self._seen = 0

    # -- the run ------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        # replies from before this run (a stack it did not start) are not ours to count
        self._seen = len(_get(self.channels_url + "/_admin/sent?channel=http&accepted=1"))
        for peer, url in self.llm_urls.items():
            _post(url + "/_admin/scenario", scenario(self.planned, peer))
        watcher = threading.Thread(target=self._watch, name="soak-watch", daemon=True)
        chaos = threading.Thread(target=self._chaos, name="soak-chaos", daemon=True)
        watcher.start()
        chaos.start()
        try:
            with ThreadPoolExecutor(
                max_workers=self.o.concurrency + 2, thread_name_prefix="soak-send"
            ) as pool:
                for p in self.planned:
                    while not self.slots.acquire(timeout=1.0):
                        if time.monotonic() > self.deadline:
                            break
                    if time.monotonic() > self.deadline:
                        break
                    pool.submit(self._send, p)
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
            for url in self.llm_urls.values():
                with contextlib.suppress(OSError):  # a stack stopped under us (SIGTERM) has nothing to reset
                    _post(url + "/_admin/scenario", json.dumps({"rules": []}))
        return self.report()

    def _deliver(self, p: PlannedTurn, *, redelivery: bool) -> Attempt:
        with self.lock:
            self.sent += 1
        try:
            resp = send(self.ingress, "http", p.text, org=ORG, room=p.room, user=p.user, event_id=p.event_id)
        except httpx.TimeoutException:
            attempt = Attempt(accounting.TIMED_OUT, redelivery, at=time.monotonic())
        except Exception:  # connection refused or reset: the provider tries again
            attempt = Attempt(accounting.UNREACHABLE, redelivery, at=time.monotonic())
        else:
            if 200 <= resp.status < 300:
                ids = tuple(resp.body.get("turn_ids", [])) if isinstance(resp.body, dict) else ()
                outcome = accounting.ACCEPTED if ids else accounting.DEDUPLICATED
                attempt = Attempt(outcome, redelivery, resp.status, ids, at=time.monotonic())
            else:
                attempt = Attempt(accounting.REFUSED, redelivery, resp.status, at=time.monotonic())
        ts = self.turns[p.index]
        with self.lock:
            ts.attempts.append(attempt)
            for turn_id in attempt.turn_ids:
                self.by_id[turn_id] = ts
        return attempt

    def _send(self, p: PlannedTurn) -> None:
        for attempt in range(SEND_TRIES):
            outcome = self._deliver(p, redelivery=False).outcome
            if outcome in (accounting.ACCEPTED, accounting.DEDUPLICATED):
                if p.redeliver:
                    threading.Timer(
                        self.rng.uniform(0.0, 3.0), self._deliver, args=(p,), kwargs={"redelivery": True}
                    ).start()
                # a duplicate: an earlier attempt was taken after all; the ingress's record names its turn
                if (outcome == accounting.DEDUPLICATED and not self._resolve_one(p)) or p.poison:
                    self._release(p.index)  # no answer to wait for: a turn not found, a poisoned one
                return
            time.sleep(min(8.0, 0.5 * 2**attempt))
        self._release(p.index)

    def _release(self, index: int) -> None:
        with self.lock:
            if index in self.released:
                return
            self.released.add(index)
        self.slots.release()

    # -- observing --------------------------------------------------------------------------
    def _watch(self) -> None:
        while not self.done.is_set():
            with contextlib.suppress(OSError):  # the fake channel server is local: try again soon
                self._poll_replies()
            now = time.monotonic()
            for ts in self.turns:
                accepted = ts.accepted_at
                if accepted is not None and now - accepted > self.o.turn_timeout:
                    self._release(ts.index)
            self.done.wait(0.5)

    def _poll_replies(self) -> None:
        sent = _get(self.channels_url + "/_admin/sent?channel=http&accepted=1")
        fresh, self._seen = sent[self._seen :], len(sent)
        now = time.monotonic()
        for call in fresh:
            body = call.get("body") if isinstance(call.get("body"), dict) else {}
            if int(body.get("part", 1)) != 1:
                continue
            reply = Reply(
                turn_id=str(body.get("turn_id", "")).rsplit("-", 1)[0],
                key=str(body.get("idempotency_key", "")),
                room=str(body.get("room_id", "")),
                text=str(call.get("text", "")),
                at=now,
            )
            with self.lock:
                self.received += 1
                self.replies.append(reply)
                ts = self.by_id.get(reply.turn_id)
            if ts is not None:
                self._release(ts.index)

    def _answered(self) -> set[str]:
        with self.lock:
            return {r.turn_id for r in self.replies}

    def _open_turns(self) -> dict[str, TurnRecord]:
        """Our turns the ingress named and no reply has answered yet (poisoned ones aside)."""
        answered = self._answered()
        with self.lock:
            return {t: ts for t, ts in self.by_id.items() if t not in answered and not ts.poisoned}

    def _settle(self) -> None:
        """Wait until every accepted turn is answered (or lost), then a little for late duplicates."""
        self._resolve()
        last = max((t.accepted_at or 0.0) for t in self.turns) if self.turns else time.monotonic()
        end = min(self.deadline, last + self.o.turn_timeout)
        while time.monotonic() < end and self._open_turns():
            time.sleep(1.0)
        time.sleep(5.0)
        self._poll_replies()

    def _resolve(self) -> None:
        """Each planned event's turn as the ingress recorded it (its dedupe document)."""
        for p in self.planned:
            self._resolve_one(p)

    def _resolve_one(self, p: PlannedTurn) -> str | None:
        from shared_lib.layers.ingress import dedupe_path
        from shared_lib.turn.inbound import InboundMessage

        msg = InboundMessage(
            channel="http",
            org_id=ORG,
            room_id=p.room,
            user_id=p.user,
            text=p.text,
            message_id=p.event_id,
            event_id=p.event_id,
            received_at=datetime.now(UTC),
        )
        doc = self.store.get(dedupe_path(msg))
        turn_id = str(doc["turn_id"]) if doc and doc.get("turn_id") else None
        ts = self.turns[p.index]
        with self.lock:
            ts.ingress_turn_id = turn_id
            if turn_id:
                self.by_id[turn_id] = ts
        return turn_id

    # -- chaos ------------------------------------------------------------------------------
    def _chaos(self) -> None:
        while True:
            item = self.kill_queue.get()
            if item is None or time.monotonic() > self.deadline:
                return
            at, layer = item
            time.sleep(max(0.0, at - time.monotonic()))
            kill = self._kill(layer)
            self.kills.append(kill)
            if not kill.hit and layer != FOLLOW_UP and not any(k.hit for k in self.kills):
                # a short claim (a guardian's check) is often over before the signal lands: until a
                # kill has hit a turn, a miss is followed by a kill of the layer that holds its claim
                # across LLM calls, so that the run tests a crash mid-turn
                self.kills.append(self._kill(FOLLOW_UP, follow_up=True))

    def _held_claims(self, layer: str) -> dict[str, str]:
        """Claim document id -> holder, of our open turns' claims on ``layer`` held right now."""
        open_ = self._open_turns()
        rows = self.store.query(f"orgs/{ORG}/idempotency", where=[("status", "==", "in_progress")])
        held = {}
        for doc_id, doc in rows:
            name = doc_id.rsplit("/", 1)[-1]
            parts = name.rsplit("-", 2)  # {turn_id}-{layer}-{step}; a shadow's claim has one more part
            if len(parts) == 3 and parts[1] == layer and parts[0] in open_:
                held[name] = str(doc.get("holder", ""))
        return held

    def _kill(self, layer: str, *, follow_up: bool = False) -> KillRecord:
        # the process to kill is known before the wait: between the claim seen and the signal
        # nothing but the signal (a short claim would be completed by the time /proc is read)
        comp = local_stack.load_state(self.root)["components"][layer]
        workers = tuple(local_stack.workers(comp))
        waited = time.monotonic()
        held: dict[str, str] = {}
        while time.monotonic() - waited < CLAIM_WAIT and not self.done.is_set():
            with contextlib.suppress(Exception):  # the emulator is busy: look again
                held = self._held_claims(layer)
            if held:
                break
            time.sleep(0.05)
        at = time.monotonic()
        try:
            kill_group(int(comp["pid"]))
            # still held by the same holder with its process dead: the kill interrupted that turn
            hit = []
            for name, holder in held.items():
                doc = self.store.get(f"orgs/{ORG}/idempotency/{name}") or {}
                if doc.get("status") == "in_progress" and str(doc.get("holder", "")) == holder:
                    hit.append(name.rsplit("-", 2)[0])
            local_stack.restart(layer, root=self.root, hard=True)
        except Exception as exc:  # reported: a layer that does not come back fails the run
            return KillRecord(
                layer,
                at,
                waited_seconds=at - waited,
                workers=workers,
                error=f"{type(exc).__name__}: {exc}",
                follow_up=follow_up,
            )
        return KillRecord(
            layer,
            at,
            follow_up=follow_up,
            hit=tuple(sorted(set(hit))),
            waited_seconds=at - waited,
            restart_seconds=round(time.monotonic() - at, 2),
            workers=workers,
        )

    # -- counting ---------------------------------------------------------------------------
    def effects(self) -> dict[str, dict[str, int]]:
        """Effects per kind and turn tag: ChatWork task creations (or store tasks), memories."""
        tags = [t.tag for t in self.turns]
        found: dict[str, dict[str, int]] = {"task": {}, "memory": {}}

        def count(kind: str, text: str) -> None:
            for tag in tags:
                if tag in text:
                    found[kind][tag] = found[kind].get(tag, 0) + 1

        if self.chatwork_url:
            for call in _get(self.chatwork_url + "/_admin/calls"):
                if call.get("method") == "POST" and call.get("effect"):
                    count("task", str((call.get("form") or {}).get("body", "")))
        for _, doc in self.store.query(f"orgs/{ORG}/tasks"):
            count("task", str(doc.get("body", "")))
        for _, doc in self.store.query(f"orgs/{ORG}/memories"):
            count("memory", str(doc.get("content", "")))
        return found

    def dead_letters(self) -> dict[str, int]:
        """Dead-letter records (the observer's failures) per turn id, of the turns of this run."""
        with self.lock:
            ours = set(self.by_id)
        found: dict[str, int] = {}
        for _, doc in self.store.query(f"orgs/{ORG}/failures"):
            turn_id = str(doc.get("turn_id", ""))
            if turn_id in ours:
                found[turn_id] = found.get(turn_id, 0) + 1
        return found

    def rolled_back(self) -> str | None:
        """Why the LLM arm is rolled back for the soak's organisation right now (``None``: it is not)."""
        from shared_lib.rollout.overrides import read_override

        override = read_override(self.store)
        now = datetime.now(UTC)
        if override is None:
            return None
        if override.active(now) and (override.kill_switch or override.brain_mode == "legacy"):
            return f"{override.author}: {override.reason}"
        org = override.org_rollback(ORG, now)
        return f"{override.author} rolled {ORG} back: {override.reason}" if org is not None else None

    def report(self) -> dict[str, Any]:
        from shared_lib.persona.catalogue import load_persona

        persona = load_persona()
        self._resolve()
        with contextlib.suppress(OSError):
            self._poll_replies()
        obs = Observed(
            turns=self.turns,
            replies=list(self.replies),
            sent=self.sent,
            received_replies=self.received,
            effects=self.effects(),
            dead_letters=self.dead_letters(),
            degraded_texts=frozenset(persona.message(c) for c in DEGRADED_CODES if persona.has(c)),
            kills=self.kills,
            started=self.started,
        )
        report = accounting.books(obs, rolled_back=self.rolled_back())
        report["duration_seconds"] = round(time.monotonic() - self.started, 1)
        return report
