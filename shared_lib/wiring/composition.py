"""The composition root: settings in, a wired ``Runtime`` out.

The only module besides ``shared_lib.settings`` that looks at the process environment
(``build_runtime()`` with no mapping reads it through the settings model). It picks the
adapters the settings name (Firestore / SQLite / memory store, Pub/Sub / in-process bus,
the Anthropic client behind the local-only guard, the channel clients or recording ones),
builds every service once
(policy, context builder, task backend, notifiers, ingress configuration, rollback guard,
vault cipher), applies the process-wide configuration (configuration files, log format, the tracer
provider and its exporter),
and wires the layers: ``runner(rt, target)`` and ``wire_inprocess(rt)`` follow the same
``topology.json`` the emulator and Terraform use.

Tests and the CLI pass ``environ`` (a mapping) and keyword overrides for any service.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from shared_lib import tracing
from shared_lib.brain.vault import org_vault
from shared_lib.channels.base import IngressConfig
from shared_lib.channels.lazy import LazyChannels
from shared_lib.channels.secrets import ChannelSecrets
from shared_lib.context.builder import ContextBuilder, ContextConfig
from shared_lib.context.memory_config import load_memory_config
from shared_lib.delivery.intake import IntakeGate
from shared_lib.delivery.topology import TOPOLOGY
from shared_lib.errors import ConfigError
from shared_lib.flags import REPO_FLAGS_FILE, FlagsProvider
from shared_lib.layers import (
    authorizer,
    brain,
    context,
    executor,
    guardian,
    memory,
    observer,
    responder,
    shadow,
)
from shared_lib.layers.base import Layer, LayerRunner
from shared_lib.observability import logs
from shared_lib.peers.config import PeersConfig, load_peers
from shared_lib.peers.router import PeerRouter
from shared_lib.persona.catalogue import load_persona, verify_persona
from shared_lib.policy.config import load_policy_config
from shared_lib.ports import LLM, Bus, Channel, Embedder, LLMPeer, LLMResponse, Store
from shared_lib.prices import PriceTable
from shared_lib.rollout.guard import RollbackGuard
from shared_lib.routing.guard import LocalOnlyGuard
from shared_lib.runtime import Runtime
from shared_lib.settings import Settings, config_files
from shared_lib.settings.memory import EMBED_TARGETS
from shared_lib.telemetry.notify import build_notifiers
from shared_lib.tools.task_backend import build_task_backend
from shared_lib.turn.inbound import CHANNEL_NAMES
from shared_lib.wiring import features
from shared_lib.wiring.stages import STAGES

ENV_FILE = "charter.env"

# The targets whose stages read ``Runtime.llm``: the context's classifier, the brain and its
# shadow, the responder's phrasing, the memory target's compaction and episodes. The guardian,
# authorizer, executor, observer, ingress and admin never call a model: they get no LLM (the
# deploy contract's ``LLM_TARGETS``, the same set, says which services get the key).
LLM_STAGES = frozenset({"context", "brain", "brain_shadow", "responder", "memory"})

# functions-framework target -> layer (ingress and admin are HTTP targets with their own handlers)
LAYERS: dict[str, Layer] = {
    "context": context.LAYER,
    "brain": brain.LAYER,
    "brain_shadow": shadow.LAYER,
    "guardian": guardian.LAYER,
    "authorizer": authorizer.LAYER,
    "executor": executor.LAYER,
    "responder": responder.LAYER,
    "observer": observer.LAYER,
    "memory": memory.LAYER,
}


def build_runtime(environ: Mapping[str, str] | None = None, **overrides: Any) -> Runtime:
    """The runtime of ``environ`` (default: the process environment), with ``overrides`` by field."""
    settings: Settings = overrides.pop("settings", None) or Settings.from_env(environ)
    apply_process_settings(settings)
    store = overrides.pop("store", None) or _store(settings)
    _tracing(settings, store)
    clock = overrides.get("clock")
    prices = overrides.pop("prices", None) or PriceTable.load()
    # an injected LLM is used as given, behind the local-only guard like a built one; a peer
    # router guards each of its cloud peers itself (a local peer may serve a local-only turn)
    if "llm" in overrides:
        llm = overrides.pop("llm")
    else:  # a target whose stages never call a model builds none (and imports no SDK)
        llm = _llm(settings, store, prices) if uses_llm(settings) else None
    if llm is not None and not isinstance(llm, LocalOnlyGuard | PeerRouter):
        llm = LocalOnlyGuard(llm)  # every outbound request is checked against /local
    persona = overrides.pop("persona", None) or load_persona()
    verify_persona(persona, settings.persona_core_sha256)  # a core that is not the pinned one: no start
    secrets = overrides.pop("channel_secrets", None) or ChannelSecrets.from_settings(settings)
    channels = overrides.pop("channels", None) or _channels(settings, secrets)
    services: dict[str, Any] = {
        "settings": settings,
        "store": store,
        "bus": overrides.pop("bus", None) or _bus(settings),
        "llm": llm,
        "channels": channels,
        "channel_secrets": secrets,
        "prices": prices,
        "registry": features.tool_registry(),
        "stages": STAGES,
        "hooks": features.hooks(),
        "memory_jobs": features.memory_jobs(),
        "persona": persona,
        "policy": load_policy_config(),
        "flags": FlagsProvider(
            store,
            ttl_seconds=settings.flags_ttl_seconds,
            doc_path=settings.flags_document,
            fallback_file=REPO_FLAGS_FILE if settings.local else None,
        ),
        "context_builder": ContextBuilder(ContextConfig.from_settings(settings)),
        "ingress": IngressConfig.load(settings.ingress_config),
        "rollback_guard": RollbackGuard(),
        "intake": IntakeGate(ttl=settings.flags_ttl_seconds),
        "vault": org_vault(settings.env, settings.secret("vault_key")),
        "notifiers": build_notifiers(settings, channels),
        "embedder": overrides.pop("embedder") if "embedder" in overrides else _target_embedder(settings),
    }
    if "task_backend" not in overrides:
        services["task_backend"] = build_task_backend(settings, store, *([clock] if clock else []))
    services.update(overrides)
    return Runtime(**services)


def check_startup(environ: Mapping[str, str] | None = None) -> Settings:
    """Validate this process's configuration without connecting anywhere (``ConfigError``).

    ``functions/main.py`` calls it at import, so a service with a missing secret, an invalid
    setting or no ``CHARTER_ENV`` at all fails to start. The runtime itself is built lazily in the serving worker:
    gunicorn forks after the import, and gRPC clients must not cross a fork.
    """
    settings = Settings.from_env(environ).served()  # a service says its CHARTER_ENV
    IngressConfig.load(settings.ingress_config)
    org_vault(settings.env, settings.secret("vault_key"))
    ContextConfig.from_settings(settings)
    load_peers(settings.peers)
    load_memory_config(settings.memory_file)
    tracing.TraceConfig.of(settings)
    apply_process_settings(settings)
    verify_persona(load_persona(), settings.persona_core_sha256)
    if embeds(settings):
        if settings.embedder == "local":
            from shared_lib.adapters.embedder_local import model_dir

            model_dir()  # the model package is installed (the model itself loads on the first embed)
        _embedder(settings)
    return settings


def uses_llm(settings: Settings) -> bool:
    """Whether this process's stages call a model: one process of every stage (``target`` unset:
    the CLI, the demo, tests) or a target of ``LLM_STAGES``. Any other builds no LLM, so it never
    imports an SDK (``tests/static/test_target_imports.py``)."""
    return settings.target is None or settings.target in LLM_STAGES


def embeds(settings: Settings) -> bool:
    """Whether this process's stages embed text: every stage, or a target of ``EMBED_TARGETS``."""
    return settings.target is None or settings.target in EMBED_TARGETS


def _target_embedder(settings: Settings) -> Embedder | None:
    return _embedder(settings) if embeds(settings) else None


def apply_process_settings(settings: Settings) -> None:
    """What is process-wide by nature: which configuration files, and the log format."""
    config_files.configure(config_files.ConfigFiles.of(settings))
    logs.configure(json_logs=settings.log_json, project=settings.project)


def _tracing(settings: Settings, store: Store) -> None:
    """This process's tracer provider (``shared_lib.tracing``), kept while nothing changed."""
    config = tracing.TraceConfig.of(settings)
    if tracing.configured(config, store):
        return
    exporter = None
    if config.exporter == "store":
        from shared_lib.adapters.trace_exporter import StoreSpanExporter

        exporter = StoreSpanExporter(store)
    tracing.configure(config, exporter=exporter, owner=store)


def operator_runtime(
    *, store: str | None = None, project: str | None = None, home: Path | None = None
) -> Runtime:
    """The runtime of an operator command; never an LLM.

    ``--store``/``--project`` win; then the environment's settings; when the environment names
    no store, what ``charter local up`` (``.charter/local/charter.env``, the emulator hosts and
    project) or else ``charter demo`` (``.charter/demo/charter.env``) left behind fills in.

    ``ConfigError`` when no store is configured: an operator command never answers from a
    fresh in-memory store.
    """
    values: dict[str, Any] = {}
    if store in ("firestore", "memory"):
        values["store"] = store
    elif store:
        values.update(store="sqlite", store_path=Path(store))
    if project:
        values["project"] = project
    settings = Settings.from_env(env_file=operator_env_file(home), **values)
    if settings.store == "memory":
        raise ConfigError(
            "no store configured: start the local stack (`charter local up`), run `charter demo`, "
            "or give --store firestore --project P (or --store FILE.sqlite)"
        )
    from shared_lib.adapters.inproc_bus import InProcessBus

    return build_runtime(settings=settings, llm=None, bus=InProcessBus(), notifiers=[])


def operator_env_file(home: Path | None = None) -> Path | None:
    """The settings file the operator commands read: none when the environment names a store,
    else what ``charter local up`` (``.charter/local/charter.env``) or else ``charter demo``
    (``.charter/demo/charter.env``) left behind."""
    environment = Settings.from_env()
    if environment.store != "memory":
        return None
    home = home or environment.home
    return next((f for f in (home / "local" / ENV_FILE, home / "demo" / ENV_FILE) if f.is_file()), None)


def write_env_file(path: Path, values: Mapping[str, str]) -> Path:
    """A dotenv file of settings for the operator commands (``operator_runtime`` reads it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{k}={v}\n" for k, v in sorted(values.items())), encoding="utf-8")
    return path


def runner(rt: Runtime, target: str) -> LayerRunner:
    return LayerRunner(LAYERS[target], rt)


def _store(settings: Settings) -> Store:
    if settings.store == "firestore":
        if settings.firestore_emulator_host:  # the client library reads it from the environment
            os.environ["FIRESTORE_EMULATOR_HOST"] = settings.firestore_emulator_host
        from shared_lib.adapters.firestore_store import FirestoreStore

        return FirestoreStore(project=settings.project)
    if settings.store == "sqlite":
        from shared_lib.adapters.sqlite_store import SQLiteStore

        assert settings.store_path is not None  # the settings model requires it
        return SQLiteStore(settings.store_path)
    from shared_lib.adapters.memory_store import MemoryStore

    return MemoryStore()


def _bus(settings: Settings) -> Bus:
    if settings.bus == "pubsub":
        if settings.pubsub_emulator_host:  # the client library reads it from the environment
            os.environ["PUBSUB_EMULATOR_HOST"] = settings.pubsub_emulator_host
        from shared_lib.adapters.pubsub_bus import PubSubBus

        return PubSubBus(settings.project)
    from shared_lib.adapters.inproc_bus import InProcessBus

    return InProcessBus()


def _llm(settings: Settings, store: Store, prices: PriceTable) -> LLM | None:
    """The peers of the settings behind one ``PeerRouter`` (``shared_lib.peers``); ``None`` when
    the LLM is off or no peer can call anyone (no key, no base URL: tests, operator commands)."""
    from shared_lib.peers.factory import build_peer, usable

    config = load_peers(settings.peers)
    ready = [usable(spec, settings) for spec in config.peers]
    if settings.llm == "none" or not any(ready):
        return None
    if not all(ready):
        lacking = ", ".join(s.name for s, ok in zip(config.peers, ready, strict=True) if not ok)
        raise ConfigError(f"peer {lacking}: no API key and no base URL")
    return peer_router(
        config, {s.name: build_peer(s, settings) for s in config.peers}, settings, store, prices
    )


def peer_router(
    config: PeersConfig, peers: Mapping[str, LLMPeer], settings: Settings, store: Store, prices: PriceTable
) -> PeerRouter:
    """The router over ``peers``: each behind its call log (``CHARTER_LLM_CALL_LOG``), each cloud
    peer also behind the local-only guard (outermost: a refused request is not a call)."""
    from shared_lib.peers.health import HealthBoard
    from shared_lib.telemetry.llm_calls import LLMCallLog

    callers: dict[str, LLM] = {}
    logs: dict[str, LLMCallLog] = {}
    for spec in config.peers:
        caller: LLM = peers[spec.name]
        if settings.llm_call_log:
            caller = logs[spec.name] = LLMCallLog(
                caller,
                store,
                peer=spec.name,
                prices=prices,
                default_org=settings.org_default,
                retention=settings.retention,
            )
        callers[spec.name] = caller if spec.local else LocalOnlyGuard(caller)

    def annotate(answer: LLMResponse) -> None:  # the fallbacks, on the answer's call log entry
        log = logs.get(answer.peer)
        if log is not None and answer.call_id:
            log.annotate(answer.call_id, {"fallbacks": answer.fallbacks})

    board = HealthBoard(store, peers, interval=settings.peer_health_seconds)
    return PeerRouter(config, peers, board, callers=callers, annotate=annotate)


def _embedder(settings: Settings) -> Embedder | None:
    """The settings' ``Embedder`` (``CHARTER_EMBEDDER``); neither loads a model nor connects."""
    if settings.embedder == "none":
        return None
    if settings.embedder == "vertex":
        from shared_lib.adapters.embedder_vertex import VertexEmbedder

        if not settings.project or settings.project == Settings.model_fields["project"].default:
            raise ConfigError("CHARTER_EMBEDDER=vertex needs the Google Cloud project (CHARTER_PROJECT)")
        if not settings.embedding_location:
            raise ConfigError("CHARTER_EMBEDDER=vertex needs CHARTER_EMBEDDING_LOCATION")
        return VertexEmbedder(
            project=settings.project, location=settings.embedding_location, model=settings.embedding_model
        )
    from shared_lib.adapters.embedder_local import LocalEmbedder

    return LocalEmbedder()


def _channels(settings: Settings, secrets: ChannelSecrets) -> Mapping[str, Channel]:
    if settings.channels == "clients":

        def clients() -> dict[str, Channel]:
            from shared_lib.channels.clients import build_channels

            return build_channels(secrets)

        return LazyChannels(CHANNEL_NAMES, clients)
    from shared_lib.adapters.recording_channel import RecordingChannel

    return {name: RecordingChannel(name) for name in CHANNEL_NAMES}


def wire_inprocess(rt: Runtime) -> None:
    """Subscribe every target to the in-process bus exactly as ``topology.json`` says.

    The smoke twins go to the same runners: in one process there is only one revision.
    """
    from shared_lib.adapters.inproc_bus import InProcessBus

    if not isinstance(rt.bus, InProcessBus):
        raise TypeError("wire_inprocess needs the in-process bus")
    for name, sub in TOPOLOGY.all_subscriptions.items():
        rt.bus.subscribe(
            sub.topic,
            runner(rt, sub.target).handle,
            name=name,
            dead_letter=sub.dead_letter,
            filter_expr=sub.filter,
        )
