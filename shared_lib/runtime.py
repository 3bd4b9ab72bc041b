"""The typed services every layer is given: ``Runtime``.

It lives low in the house: it imports ports, settings and the types of the services, never
a layer, an adapter or the composition root (``shared_lib.wiring.composition`` builds it). A layer
reads the services it needs from it; a domain module below the layers takes the few values
it uses (or declares a small ``Protocol`` of them), so nothing under ``layers`` depends on
this module's shape.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from cryptography.fernet import MultiFernet

from shared_lib.channels.base import IngressConfig
from shared_lib.channels.secrets import ChannelSecrets
from shared_lib.context.builder import ContextBuilder
from shared_lib.delivery.intake import IntakeGate
from shared_lib.delivery.topology import TOPOLOGY
from shared_lib.errors import ConfigError
from shared_lib.flags import FlagsProvider
from shared_lib.flags.document import BestOfN
from shared_lib.ids import new_ulid, utc_now
from shared_lib.persona.catalogue import Persona
from shared_lib.policy.config import PolicyConfig
from shared_lib.ports import LLM, Bus, Channel, Embedder, LLMRequest, Store
from shared_lib.prices import PriceTable
from shared_lib.privacy.org_vault import OrgVault
from shared_lib.rollout.guard import RollbackGuard
from shared_lib.settings import Settings
from shared_lib.telemetry.notify import Notifier
from shared_lib.tools.directory import PersonCache
from shared_lib.tools.registry import ToolRegistry
from shared_lib.tools.task_backend import TaskBackend
from shared_lib.turn.envelope import ToolResult, Turn
from shared_lib.turn.inbound import InboundMessage
from shared_lib.turn.stages import Stage

# A background memory job (``POST /tasks/memory/<job>``): the job's message in, its record out.
MemoryJob = Callable[["Runtime", dict[str, Any]], dict[str, Any]]


class InboundBuffer(Protocol):
    """Where the ingress holds a message for the turn that will gather it (the debounce)."""

    def hold(self, rt: Runtime, msg: InboundMessage, *, entry_id: str, turn_id: str) -> str | None:
        """The buffer's path when the message is held, ``None`` when it goes alone."""

    def release(self, rt: Runtime, path: str, entry_id: str) -> None:
        """Take back a held message whose turn was not published."""


class Phrasing(Protocol):
    """Another way to phrase the reply text than one call (Best-of-N), for the organisations it serves."""

    def settings_for(self, turn: Turn, rt: Runtime) -> BestOfN | None:
        """Its settings when it serves the turn's organisation, else ``None``."""

    def phrase(
        self,
        turn: Turn,
        rt: Runtime,
        request: LLMRequest,
        *,
        question: str,
        results: list[ToolResult],
        flags: BestOfN,
        single: Callable[[LLMRequest], str],
    ) -> str:
        """The reply text (``""``: the persona's templates answer)."""

    def phrase_text(self, turn: Turn, rt: Runtime, *, user_text: str, draft: str, flags: BestOfN) -> str:
        """A text answer: the proposal's ``draft`` or a better wording of it."""


@dataclass(frozen=True)
class Hooks:
    """What a feature room lends a layer, the brain or an entry point outside the stage table,
    one room per hook (``shared_lib.wiring.features`` refuses a second claim). A manifest declares
    its room's; the composition root puts them on the runtime; ``None``: no room lends it, and the
    caller goes without (no buffer, no extension, one phrasing call, the registry alone)."""

    # the ingress holds a message of a debounced channel (``features.debounce``)
    inbound_buffer: InboundBuffer | None = None
    # an organisation's extension of the persona, for the memory target's voice (``features.persona_learning``)
    persona_ext: Callable[[Store, str], dict[str, Any]] | None = None
    # the reply's phrasing among N candidates (``features.best_of_n``)
    phrasing: Phrasing | None = None
    # an organisation's own tools added to the registry (``features.skills``: its approved skills)
    org_tools: Callable[[ToolRegistry, Store, str], ToolRegistry] | None = None
    # the heartbeat tick runs the periodic tasks come due (``features.heartbeat_tasks``)
    heartbeat_tasks: Callable[[Runtime], dict[str, int]] | None = None

    def merged(self, other: Hooks, *, owner: str) -> Hooks:
        """These and ``other``'s; a hook both lend is a ``ConfigError`` naming ``owner``."""
        taken = [f.name for f in dataclasses.fields(self) if getattr(self, f.name) and getattr(other, f.name)]
        if taken:
            raise ConfigError(f"feature {owner}: hook {', '.join(taken)} already lent by another feature")
        lent = {f.name: getattr(other, f.name) for f in dataclasses.fields(other) if getattr(other, f.name)}
        return dataclasses.replace(self, **lent)


@dataclass
class Runtime:
    """One process's services, built once by ``shared_lib.wiring.composition.build_runtime``."""

    settings: Settings
    store: Store
    bus: Bus
    llm: LLM | None
    channels: Mapping[str, Channel]
    registry: ToolRegistry
    persona: Persona
    flags: FlagsProvider
    prices: PriceTable
    policy: PolicyConfig
    context_builder: ContextBuilder
    task_backend: TaskBackend
    ingress: IngressConfig
    channel_secrets: ChannelSecrets
    rollback_guard: RollbackGuard
    # the deployment's vault keys: ``cipher(org)`` is an organisation's (None: no key, nothing sealed)
    vault: OrgVault | None
    # the stage table of the composition root (``shared_lib.wiring.stages``): each turn stage's steps
    stages: Mapping[str, Stage]
    # what the feature rooms lend outside the stage table (``shared_lib.wiring.features``)
    hooks: Hooks = field(default_factory=Hooks)
    # the background memory target's scheduled jobs by name: its own and the rooms'
    memory_jobs: Mapping[str, MemoryJob] = field(default_factory=dict)
    notifiers: list[Notifier] = field(default_factory=list)
    # text to vectors for memory search and ingestion (CHARTER_EMBEDDER); None: keyword search only
    embedder: Embedder | None = None
    # the ingress's directory lookups (a person found is remembered briefly: fast acknowledgements)
    people: PersonCache = field(default_factory=PersonCache)
    # whether the admin's Pause holds intake (``config/intake``, trusted while running for a lifetime)
    intake: IntakeGate = field(default_factory=IntakeGate)
    clock: Callable[[], datetime] = utc_now
    # how a layer waits (the debounce's window); tests give one that moves their clock
    sleep: Callable[[float], None] = time.sleep

    def for_turn(self, turn: Turn) -> Runtime:
        """This runtime for one turn: its registry holds the turn's organisation's approved skills
        (seed 001 §23.5) besides the built-ins, for every layer (brain, guardian, gate, executor)."""
        registry = self.registry_of(turn.org_id)
        return self if registry is self.registry else dataclasses.replace(self, registry=registry)

    def cipher(self, org_id: str) -> MultiFernet | None:
        """The vault cipher of ``org_id``: what its people keep is sealed and opened with it alone
        (``shared_lib.privacy.org_vault``); ``None`` without a vault key."""
        return self.vault.for_org(org_id) if self.vault is not None else None

    def registry_of(self, org_id: str) -> ToolRegistry:
        """The tools of one organisation: the registry, and what a room adds for it (the skills)."""
        add = self.hooks.org_tools
        return self.registry if add is None else add(self.registry, self.store, org_id)

    def emit_event(
        self,
        turn: Turn | None,
        kind: str,
        code: str,
        payload: dict[str, Any] | None = None,
        *,
        event_id: str | None = None,
    ) -> dict[str, Any]:
        """An event for the observer (alerts, violations, LLM calls), published on ``turns.events``
        (its smoke twin for a smoke turn, so the candidate observer gets it). ``event_id`` derived
        from the turn makes a stage that runs again on redelivery raise it once (the observer
        stores an event by its id with ``create``)."""
        now = self.clock().isoformat()
        event = {
            "event_id": event_id or new_ulid(),
            "kind": kind,
            "code": code,
            "at": now,
            "occurred_at": now,
            "org_id": turn.org_id if turn else None,
            "turn_id": turn.turn_id if turn else None,
            "layer": (turn.trail[-1].layer if turn and turn.trail else None),
            **(payload or {}),
        }
        self.bus.publish(
            TOPOLOGY.route("events", smoke=turn is not None and turn.smoke),
            json.dumps(event, ensure_ascii=False, default=str).encode(),
            {"kind": "event", "event_kind": kind, "code": code},
            "",
        )
        return event

    def emit_alert(
        self, turn: Turn | None, code: str, message: str, *, event_id: str | None = None
    ) -> dict[str, Any]:
        return self.emit_event(turn, "alert", code, {"message": message}, event_id=event_id)
