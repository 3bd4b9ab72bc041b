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
from typing import Any

from cryptography.fernet import MultiFernet

from shared_lib.channels.base import IngressConfig
from shared_lib.channels.secrets import ChannelSecrets
from shared_lib.context.builder import ContextBuilder
from shared_lib.delivery.topology import TOPOLOGY
from shared_lib.flags import FlagsProvider
from shared_lib.ids import new_ulid, utc_now
from shared_lib.persona.catalogue import Persona
from shared_lib.policy.config import PolicyConfig
from shared_lib.ports import LLM, Bus, Channel, Embedder, Store
from shared_lib.prices import PriceTable
from shared_lib.rollout.guard import RollbackGuard
from shared_lib.settings import Settings
from shared_lib.telemetry.notify import Notifier
from shared_lib.tools.directory import PersonCache
from shared_lib.tools.registry import ToolRegistry
from shared_lib.tools.skill_tools import registry_for
from shared_lib.tools.task_backend import TaskBackend
from shared_lib.turn.envelope import Turn
from shared_lib.turn.stages import Stage


@dataclass
class Runtime:
    """One process's services, built once by ``shared_lib.wiring.composition.build_runtime``."""

    settings: Settings
    store: Store
    bus: Bus
    llm: LLM | None
    channels: dict[str, Channel]
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
    vault: MultiFernet | None
    # the stage table of the composition root (``shared_lib.wiring.stages``): each turn stage's steps
    stages: Mapping[str, Stage]
    notifiers: list[Notifier] = field(default_factory=list)
    # text to vectors for memory search and ingestion (CHARTER_EMBEDDER); None: keyword search only
    embedder: Embedder | None = None
    # the ingress's directory lookups (a person found is remembered briefly: fast acknowledgements)
    people: PersonCache = field(default_factory=PersonCache)
    clock: Callable[[], datetime] = utc_now
    # how a layer waits (the debounce's window); tests give one that moves their clock
    sleep: Callable[[float], None] = time.sleep

    def for_turn(self, turn: Turn) -> Runtime:
        """This runtime for one turn: its registry holds the turn's organisation's approved skills
        (seed 001 §23.5) besides the built-ins, for every layer (brain, guardian, gate, executor)."""
        registry = registry_for(self.registry, self.store, turn.org_id)
        return self if registry is self.registry else dataclasses.replace(self, registry=registry)

    def emit_event(
        self, turn: Turn | None, kind: str, code: str, payload: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """An event for the observer (alerts, violations, LLM calls), published on ``turns.events``
        (its smoke twin for a smoke turn, so the candidate observer gets it)."""
        now = self.clock().isoformat()
        event = {
            "event_id": new_ulid(),
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

    def emit_alert(self, turn: Turn | None, code: str, message: str) -> dict[str, Any]:
        return self.emit_event(turn, "alert", code, {"message": message})
