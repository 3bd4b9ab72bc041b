"""The composition root: wires ports to adapters from settings/environment.

No layer imports an adapter; each receives a ``Runtime``. ``build_runtime()`` picks the
cloud/emulator adapters (Firestore, Pub/Sub, Anthropic, channel clients) or the embedded
ones (memory store, in-process bus, recording channels) from the environment;
``wire_inprocess()`` subscribes every layer to the in-process bus, following the same
``topology.json`` the emulator and Terraform use.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from shared_lib.envelope import Turn
from shared_lib.flags import REPO_FLAGS_FILE, FlagsProvider
from shared_lib.ids import new_ulid, utc_now
from shared_lib.layers import authorizer, brain, context, executor, guardian, observer, responder, shadow
from shared_lib.layers.base import Layer, LayerRunner
from shared_lib.persona import Persona, load_persona
from shared_lib.ports import LLM, Bus, Channel, Store
from shared_lib.prices import PriceTable
from shared_lib.settings import Settings
from shared_lib.tools.builtin import builtin_registry
from shared_lib.tools.registry import ToolRegistry
from shared_lib.topology import TOPOLOGY

# functions-framework target -> layer (the observer and ingress have their own handlers)
LAYERS: dict[str, Layer] = {
    "context": context.LAYER,
    "brain": brain.LAYER,
    "brain_shadow": shadow.LAYER,
    "guardian": guardian.LAYER,
    "authorizer": authorizer.LAYER,
    "executor": executor.LAYER,
    "responder": responder.LAYER,
}


@dataclass
class Runtime:
    settings: Settings
    store: Store
    bus: Bus
    llm: LLM | None
    channels: dict[str, Channel]
    registry: ToolRegistry
    persona: Persona
    flags: FlagsProvider
    prices: PriceTable
    clock: Callable[[], datetime] = utc_now
    extras: dict[str, Any] = field(default_factory=dict)

    def runner(self, target: str) -> LayerRunner:
        return LayerRunner(LAYERS[target], self)

    def emit_event(
        self,
        turn: Turn | None,
        kind: str,
        code: str,
        payload: dict[str, Any] | None = None,
        *,
        publish: bool = True,
    ) -> dict[str, Any]:
        """An event for the observer (alerts, violations); published on ``turns.events``."""
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
        if publish:
            self.bus.publish(
                "events",
                json.dumps(event, ensure_ascii=False, default=str).encode(),
                {"kind": "event", "event_kind": kind, "code": code},
                "",
            )
        else:
            observer.record_event(self, event)
        return event

    def emit_alert(
        self, turn: Turn | None, code: str, message: str, *, publish: bool = True
    ) -> dict[str, Any]:
        return self.emit_event(turn, "alert", code, {"message": message}, publish=publish)


def build_runtime(environ: Mapping[str, str] | None = None, **overrides: Any) -> Runtime:
    env = os.environ if environ is None else environ
    settings = overrides.pop("settings", None) or Settings.from_env(env)
    store = overrides.pop("store", None) or _store(settings)
    bus = overrides.pop("bus", None) or _bus(settings)
    prices = PriceTable.load(env.get("CHARTER_PRICES"))
    if "llm" in overrides:  # an injected LLM is used exactly as given
        llm = overrides.pop("llm")
    else:
        llm = _llm(settings, env)
        if llm is not None and env.get("CHARTER_LLM_CALL_LOG", "1") == "1":
            from shared_lib.ops.llm_calls import LLMCallLog

            llm = LLMCallLog(llm, store, prices=prices, default_org=settings.org_default)
    channels = overrides.pop("channels", None) or _channels(env)
    flags = overrides.pop("flags", None) or FlagsProvider(
        store,
        ttl_seconds=float(env.get("CHARTER_FLAGS_TTL", "10")),
        fallback_file=REPO_FLAGS_FILE if settings.env in ("demo", "test", "local") else None,
    )
    return Runtime(
        settings=settings,
        store=store,
        bus=bus,
        llm=llm,
        channels=channels,
        registry=overrides.pop("registry", None) or builtin_registry(),
        persona=overrides.pop("persona", None) or load_persona(env.get("CHARTER_PERSONA")),
        flags=flags,
        prices=prices,
        **overrides,
    )


def _store(settings: Settings) -> Store:
    if settings.store == "firestore":
        from shared_lib.adapters.firestore_store import FirestoreStore

        return FirestoreStore(project=settings.project)
    from shared_lib.adapters.memory_store import MemoryStore

    return MemoryStore()


def _bus(settings: Settings) -> Bus:
    if settings.bus == "pubsub":
        from shared_lib.adapters.pubsub_bus import PubSubBus

        return PubSubBus(settings.project)
    from shared_lib.adapters.inproc_bus import InProcessBus

    return InProcessBus()


def _llm(settings: Settings, env: Mapping[str, str]) -> LLM | None:
    if settings.llm == "none" or not (env.get("ANTHROPIC_API_KEY") or env.get("ANTHROPIC_BASE_URL")):
        return None
    from shared_lib.adapters.anthropic_llm import AnthropicLLM

    return AnthropicLLM(
        api_key=env.get("ANTHROPIC_API_KEY") or "local-fake",
        base_url=env.get("ANTHROPIC_BASE_URL"),
        timeout=settings.llm_timeout_seconds,
        max_retries=settings.llm_max_retries,
    )


def _channels(env: Mapping[str, str]) -> dict[str, Channel]:
    if env.get("CHARTER_CHANNELS", "clients") == "clients":
        from shared_lib.channels.clients import build_channels

        return build_channels(env)
    from shared_lib.adapters.recording_channel import RecordingChannel

    return {name: RecordingChannel(name) for name in ("chatwork", "line", "slack", "http")}


def wire_inprocess(rt: Runtime) -> None:
    """Subscribe every target to the in-process bus exactly as ``topology.json`` says."""
    from shared_lib.adapters.inproc_bus import InProcessBus

    if not isinstance(rt.bus, InProcessBus):
        raise TypeError("wire_inprocess needs the in-process bus")
    for name, sub in TOPOLOGY.subscriptions.items():
        if sub.target == "observer":

            def handler(data: bytes, attrs: dict[str, str]) -> None:
                observer.handle(rt, data, attrs)
        else:
            handler = rt.runner(sub.target).handle  # type: ignore[assignment]
        rt.bus.subscribe(sub.topic, handler, name=name, dead_letter=sub.dead_letter)
