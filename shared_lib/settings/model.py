"""The one settings model: the only reader of the environment (pydantic-settings).

Every variable the product reads is a typed field here, named by its environment variable
(``validation_alias``), with a default per environment and metadata that says which Cloud
Run services read it and how Terraform must provide it:

* ``targets``  — the functions-framework targets (``topology.json``) that use it; ``*`` = all;
* ``deploy``   — ``"env"`` (a plain value Terraform sets), ``"secret"`` (a Secret Manager
  reference under the same name), or ``None`` (a default or a local-only knob);
* ``required`` — whether a cloud environment (dev/stg/prod) refuses to start without it.

``deploy_contract(env)`` derives, for every service, the names Terraform must provide; a
static test holds ``terraform/`` to exactly that. Validation runs at process start
(``functions/main.py`` builds the runtime at import): a mis-configured service fails to start.

>>> s = Settings.from_env({"CHARTER_ENV": "test"})
>>> (s.store, s.bus, s.log_json)
('memory', 'inproc', False)
>>> Settings.from_env({"CHARTER_ENV": "prod", "CHARTER_PROJECT": "p"}).store
'firestore'
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from contextvars import ContextVar
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from shared_lib.errors import ConfigError
from shared_lib.settings.fields import _f, _MappingSource, _meta, _names
from shared_lib.settings.operators import OperatorSettings

# ``Settings.from_env(mapping)`` reads that mapping *instead of* the process environment.
_EXPLICIT: ContextVar[Mapping[str, str] | None] = ContextVar("charter_settings_environ", default=None)

RetentionDays = Annotated[int, Field(ge=1, le=3650)]
Env = Literal["demo", "local", "test", "dev", "stg", "prod"]
CLOUD_ENVS: frozenset[str] = frozenset({"dev", "stg", "prod"})
LOCAL_ENVS: frozenset[str] = frozenset({"demo", "local", "test"})
# context: the router's classifier (seed 003) calls the fast model on what no rule decides
LLM_TARGETS = ("context", "brain", "brain_shadow", "responder", "memory")
# ingress, context: the debounce buffer; ingress, admin: the turns a paused intake holds (sealed)
VAULT_TARGETS = ("ingress", "context", "brain", "brain_shadow", "executor", "admin")


class Settings(OperatorSettings):
    """Everything Charter reads from its environment. Frozen: built once per process."""

    model_config = SettingsConfigDict(
        frozen=True, extra="ignore", case_sensitive=True, populate_by_name=True, env_ignore_empty=True
    )

    # -- where and what: every service
    # Unset means local for a developer's command (the CLI, the demo) only: a served function
    # needs it said (``served``), and Cloud Run (K_SERVICE) needs dev, stg or prod.
    env: Env = _f("local", "CHARTER_ENV", deploy="env", required=True)
    project: str = _f("charter-local", "CHARTER_PROJECT", "GOOGLE_CLOUD_PROJECT", deploy="env", required=True)
    google_cloud_project: str | None = _f(
        None, "GOOGLE_CLOUD_PROJECT", deploy="env", required=True, doc="read by the Google client libraries"
    )
    target: str | None = _f(
        None,
        "FUNCTION_TARGET",
        deploy="env",
        required=True,
        doc="the functions-framework target this process serves",
    )
    signature_type: str | None = _f(None, "FUNCTION_SIGNATURE_TYPE", deploy="env", required=True)
    threads: int | None = _f(
        None,
        "THREADS",
        deploy="env",
        required=True,
        ge=1,
        doc="functions-framework's gunicorn threads: the service's concurrency",
    )
    store: Literal["memory", "sqlite", "firestore"] = _f(None, "CHARTER_STORE", deploy="env", required=True)
    store_path: Path | None = _f(None, "CHARTER_STORE_PATH", doc="the SQLite file of CHARTER_STORE=sqlite")
    bus: Literal["inproc", "pubsub"] = _f(None, "CHARTER_BUS", deploy="env", required=True)
    firestore_emulator_host: str | None = _f(None, "FIRESTORE_EMULATOR_HOST")
    pubsub_emulator_host: str | None = _f(None, "PUBSUB_EMULATOR_HOST")
    log_json: bool = _f(None, "CHARTER_LOG_JSON", deploy="env", required=True)
    org_default: str = _f("default", "CHARTER_DEFAULT_ORG")
    flags_document: str = _f("config/flags", "CHARTER_FLAGS_DOCUMENT", deploy="env", required=True)
    flags_ttl_seconds: float = _f(10.0, "CHARTER_FLAGS_TTL", ge=0)
    # A claim's lease, renewed every third of it while the layer works (idempotency.py). The turn's
    # budget counts work, not waits (budgets.py); a wait past the backlog's is owned up to, alerted.
    lease_seconds: int = _f(10, "CHARTER_LEASE_SECONDS", ge=1)
    turn_budget_seconds: float = _f(45.0, "CHARTER_TURN_BUDGET_SECONDS", targets=("ingress",), gt=0)
    backlog_seconds: float = _f(120.0, "CHARTER_ADMITTED_BACKLOG_SECONDS", targets=("ingress",), gt=0)
    max_steps: int = _f(3, "CHARTER_MAX_STEPS", ge=1, le=10)  # the loop controller: seed 002 §3.1's
    max_turn_seconds: float = _f(90.0, "CHARTER_MAX_TURN_SECONDS", gt=0)  # max_loops 3, max_millis 90 000
    blob_ttl_days: int = _f(7, "CHARTER_BLOB_TTL_DAYS", ge=1)
    fault_injection: bool = _f(False, "CHARTER_FAULT_INJECTION")
    # The Pub/Sub emulator does not dead-letter ordered subscriptions; the local stack turns
    # this on so the push handler counts attempts and dead-letters itself (shared_lib.wiring.push).
    deadletter_fallback: bool = _f(False, "CHARTER_DEADLETTER_FALLBACK")
    channels: Literal["clients", "recording"] = _f("clients", "CHARTER_CHANNELS")
    home: Path = _f(Path(".charter"), "CHARTER_HOME", doc="where the local stack and the demo leave settings")
    # Cloud Run sets K_REVISION itself; the local stack's candidate processes set CHARTER_REVISION.
    revision: str = _f("stable", "CHARTER_REVISION", "K_REVISION", doc="recorded per layer in the trail")
    # -- tracing (shared_lib.tracing): the exporter of every service and the share of turns traced
    trace_exporter: Literal["none", "store", "cloud_trace", "memory"] = _f(
        None,
        "CHARTER_TRACE_EXPORTER",
        deploy="env",
        doc="none, store (local stack), cloud_trace, memory (tests)",
    )
    trace_sample_ratio: float = _f(1.0, "CHARTER_TRACE_SAMPLE_RATIO", deploy="env", ge=0, le=1)

    # -- configuration files (defaults ship in the package)
    policy_file: Path | None = _f(None, "CHARTER_POLICY")
    persona_file: Path | None = _f(None, "CHARTER_PERSONA")
    # the persona core's pinned SHA-256, over the persona file's core_sha256 (empty: that one)
    persona_core_sha256: str | None = _f(None, "CHARTER_PERSONA_CORE_SHA256", deploy="env")
    prices_file: Path | None = _f(None, "CHARTER_PRICES")
    tools_file: Path | None = _f(None, "CHARTER_TOOLS_FILE")
    brain_config_file: Path | None = _f(None, "CHARTER_BRAIN_CONFIG")
    sanitizer_rules_file: Path | None = _f(None, "CHARTER_SANITIZER_RULES")
    routing_file: Path | None = _f(None, "CHARTER_ROUTING")

    # -- the LLM
    llm: Literal["anthropic", "none"] = _f("anthropic", "CHARTER_LLM", targets=LLM_TARGETS)
    anthropic_api_key: SecretStr | None = _f(
        None, "ANTHROPIC_API_KEY", targets=LLM_TARGETS, deploy="secret", required=True
    )
    anthropic_base_url: str | None = _f(None, "ANTHROPIC_BASE_URL", targets=LLM_TARGETS)
    model: str = _f("claude-sonnet-4-6", "CHARTER_MODEL", targets=LLM_TARGETS)
    fast_model: str = _f("claude-haiku-4-5", "CHARTER_FAST_MODEL", targets=LLM_TARGETS)
    max_tokens: int = _f(1500, "CHARTER_MAX_TOKENS", targets=LLM_TARGETS, ge=64, le=64000)
    llm_timeout_seconds: float = _f(30.0, "CHARTER_LLM_TIMEOUT", targets=LLM_TARGETS, gt=0)
    llm_max_retries: int = _f(3, "CHARTER_LLM_MAX_RETRIES", targets=LLM_TARGETS, ge=0, le=10)
    llm_backoff_initial: float = _f(0.5, "CHARTER_LLM_BACKOFF_INITIAL", targets=LLM_TARGETS, ge=0)
    llm_backoff_max: float = _f(8.0, "CHARTER_LLM_BACKOFF_MAX", targets=LLM_TARGETS, ge=0)
    llm_retry_after_max: float = _f(60.0, "CHARTER_LLM_RETRY_AFTER_MAX", targets=LLM_TARGETS, ge=0)
    llm_retry_budget: float = _f(
        120.0,
        "CHARTER_LLM_RETRY_BUDGET",
        targets=LLM_TARGETS,
        deploy="env",
        required=True,
        gt=0,
        doc="seconds; nests inside the request timeout",
    )
    llm_call_log: bool = _f(True, "CHARTER_LLM_CALL_LOG", targets=LLM_TARGETS)
    # the LLM peers and their routing (shared_lib.peers): a JSON file, or inline JSON starting with {
    # admin: the heartbeat's self-check names each configured peer (``ops.self_checks``)
    peers: str | None = _f(
        None, "CHARTER_PEERS", targets=(*LLM_TARGETS, "admin"), deploy="env", doc="default config/peers.json"
    )
    peer_health_seconds: float = _f(
        30.0, "CHARTER_PEER_HEALTH_SECONDS", targets=LLM_TARGETS, deploy="env", gt=0, le=3600
    )
    shadow_timeout_seconds: float = _f(45.0, "CHARTER_SHADOW_TIMEOUT", targets=("brain_shadow",), gt=0)
    vault_key: SecretStr | None = _f(
        None,
        "CHARTER_VAULT_KEY",
        targets=VAULT_TARGETS,
        deploy="secret",
        required=True,
        doc="Fernet key(s), comma-separated, newest first",
    )
    daily_hard_limit_usd: float | None = _f(None, "CHARTER_DAILY_HARD_LIMIT_USD", targets=("admin",), ge=0)

    # -- tools and context
    task_backend: Literal["store", "chatwork"] = _f(
        None, "CHARTER_TASK_BACKEND", targets=("executor", "context"), deploy="env", required=True
    )
    context_token_budget: int = _f(2000, "CHARTER_CONTEXT_TOKEN_BUDGET", targets=("context",), ge=100)
    context_source_timeout: float = _f(2.0, "CHARTER_CONTEXT_SOURCE_TIMEOUT", targets=("context",), gt=0)
    context_drop_order: str | None = _f(None, "CHARTER_CONTEXT_DROP_ORDER", targets=("context",))
    # Sources the Context Builder does not read (comma-separated names, shared_lib.context.sources):
    # a context that has lost a source, recorded as skipped and shown to no one. The local stack's
    # candidates take it to show the promotion's recall gate refusing a candidate that forgot the
    # conversation (infra.recall_gate); a cloud environment refuses it, since a service that
    # silently forgets is what that gate exists to keep from users.
    context_sources_off: str | None = _f(
        None, "CHARTER_CONTEXT_SOURCES_OFF", targets=("context",), doc="local stack only"
    )

    # -- operators: revision rollback through the Cloud Run Admin API (shared_lib.rollout.revisions)
    region: str | None = _f(None, "CHARTER_REGION", targets=(), doc="the Cloud Run region")
    run_admin_base: str = _f("https://run.googleapis.com", "CHARTER_RUN_ADMIN_BASE", targets=())
    run_admin_token: SecretStr | None = _f(None, "CHARTER_RUN_ADMIN_TOKEN", targets=(), doc="else metadata")
    # -- personal data (collections with ``retention: "org"``) is kept this long: JSON {org: days}
    retention_days: RetentionDays = _f(365, "CHARTER_RETENTION_DAYS")
    org_retention_days: dict[str, RetentionDays] = _f({}, "CHARTER_ORG_RETENTION_DAYS")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        explicit = _EXPLICIT.get()
        if explicit is not None:
            return init_settings, _MappingSource(settings_cls, explicit)
        return init_settings, env_settings, dotenv_settings

    @field_validator("*", mode="before")
    @classmethod
    def _blank_is_unset(cls, value: Any) -> Any:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("env", mode="before")
    @classmethod
    def _env_name(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    @model_validator(mode="before")
    @classmethod
    def _defaults_per_environment(cls, data: Any) -> Any:
        """Defaults that depend on the environment (or on an emulator being configured)."""
        if not isinstance(data, dict):
            return data
        data = {k: v for k, v in data.items() if v is not None}

        def given(field: str) -> Any:
            info = cls.model_fields[field]
            names = [field, *_names(info)]
            return next((data[n] for n in names if data.get(n) not in (None, "")), None)

        cloud = str(given("env") or "").strip().lower() in CLOUD_ENVS
        defaults = {
            "store": "firestore" if cloud or given("firestore_emulator_host") else "memory",
            "bus": "pubsub" if cloud or given("pubsub_emulator_host") else "inproc",
            "log_json": cloud,
            "task_backend": "store",
            "trace_exporter": "cloud_trace" if cloud else "none",
            "embedder": "vertex" if cloud else "local",
        }
        for field, value in defaults.items():
            if given(field) is None:
                data[field] = value
        return data

    @model_validator(mode="after")
    def _cloud_requirements(self) -> Settings:
        if self.k_service and not (self.env_given and self.env in CLOUD_ENVS):
            said = f"CHARTER_ENV={self.env}" if self.env_given else "no CHARTER_ENV"
            raise ValueError(
                f"Cloud Run service {self.k_service!r} with {said}: a cloud service runs in "
                f"{', '.join(sorted(CLOUD_ENVS))}; refusing to start"
            )
        if self.env not in CLOUD_ENVS:
            if self.store == "sqlite" and self.store_path is None:
                raise ValueError("CHARTER_STORE=sqlite needs CHARTER_STORE_PATH")
            return self
        problems = []
        if self.store != "firestore" or self.bus != "pubsub":
            problems.append("a cloud environment runs on CHARTER_STORE=firestore and CHARTER_BUS=pubsub")
        if self.fault_injection or self.deadletter_fallback or self.context_sources_off:
            problems.append(
                "CHARTER_FAULT_INJECTION / CHARTER_DEADLETTER_FALLBACK / CHARTER_CONTEXT_SOURCES_OFF"
                " are for the local stack only"
            )
        if self.firestore_emulator_host or self.pubsub_emulator_host:
            problems.append("emulator hosts are set in a cloud environment")
        if self.target is not None:
            given = {_meta(type(self).model_fields[f])["env"] for f in self.model_fields_set}
            from shared_lib.settings.contract import required_names

            missing = [n for n in required_names(self.target) if n not in given or not _is_set(self, n)]
            if "ANTHROPIC_API_KEY" in missing and (self.llm == "none" or self.anthropic_base_url):
                missing.remove("ANTHROPIC_API_KEY")
            if missing:
                problems.append(f"service {self.target!r} needs {', '.join(sorted(missing))}")
        if problems:
            raise ValueError(f"{self.env}: " + "; ".join(problems))
        return self

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, *, env_file: Path | None = None, **values: Any
    ) -> Settings:
        """The settings of ``environ`` (default: this process's environment); ``ConfigError`` if invalid.

        ``values`` (by field name) win over the environment, which wins over ``env_file`` (a
        dotenv file: what ``charter local up`` and ``charter demo`` leave for the operator
        commands); tests and the CLI's flags use them.
        """
        token = _EXPLICIT.set(None if environ is None else dict(environ))
        try:
            return cls(_env_file=env_file, **values)
        except ValidationError as exc:
            raise ConfigError(f"invalid configuration: {_describe(exc)}") from exc
        finally:
            _EXPLICIT.reset(token)

    def retention(self, org_id: str) -> timedelta:  # how long org_id's personal data is kept
        return timedelta(days=self.org_retention_days.get(org_id, self.retention_days))

    @property
    def cloud(self) -> bool:
        return self.env in CLOUD_ENVS

    @property
    def local(self) -> bool:
        return self.env in LOCAL_ENVS

    @property
    def env_given(self) -> bool:
        """Whether ``CHARTER_ENV`` was said (the environment or the ``.charter/`` file), not defaulted."""
        return "env" in self.model_fields_set

    @property
    def explicit_local(self) -> bool:
        """A developer's stack that said so (``CHARTER_ENV`` local, test or demo): the only place
        where published default secrets, the shared HTTP secret and an open dashboard are taken."""
        return self.env_given and self.env in LOCAL_ENVS and not self.k_service

    def served(self) -> Settings:
        """These settings for a served function (``functions/``): ``ConfigError`` unless
        ``CHARTER_ENV`` is said; a developer's command may default to local, a service never."""
        if not self.env_given:
            raise ConfigError(
                "CHARTER_ENV is not set: a served function needs it (local, test or demo on a "
                "developer's machine; dev, stg or prod in the cloud); refusing to start"
            )
        return self

    def secret(self, field: str) -> str | None:
        value = getattr(self, field)
        return value.get_secret_value() if isinstance(value, SecretStr) else value

    def raw(self, env_name: str) -> str | None:
        """The value of the setting read from ``env_name``, as text (secrets revealed)."""
        value = self.secret(_BY_ENV[env_name])
        return None if value is None else str(value)

    @classmethod
    def origins(cls, env_file: Path | None = None) -> dict[str, str]:
        """Variable name -> where its value comes from: ``environment``, ``env_file`` or ``default``."""
        from dotenv import dotenv_values

        environ = _EXPLICIT.get() or os.environ
        in_file = {k for k, v in (dotenv_values(env_file) if env_file else {}).items() if v and v.strip()}
        out = {}
        for info in cls.model_fields.values():
            names = _names(info)
            given = [n for n in names if (environ.get(n) or "").strip()]
            out[_meta(info)["env"]] = (
                "environment" if given else str(env_file) if in_file & set(names) else "default"
            )
        return out

    def describe(self) -> dict[str, Any]:
        """The effective settings by variable name, secrets masked (``charter config show``)."""
        out: dict[str, Any] = {}
        for name, info in type(self).model_fields.items():
            value = getattr(self, name)
            if isinstance(value, SecretStr):
                value = "********" if value.get_secret_value() else None
            out[_meta(info)["env"]] = str(value) if isinstance(value, Path) else value
        return out


_BY_ENV: dict[str, str] = {_meta(info)["env"]: name for name, info in Settings.model_fields.items()}


def _is_set(settings: Settings, env_name: str) -> bool:
    return settings.secret(_BY_ENV[env_name]) not in (None, "")


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ()))
        field = Settings.model_fields.get(loc)
        name = _meta(field)["env"] if field is not None else loc
        parts.append(f"{name}: {err.get('msg', '')}" if name else str(err.get("msg", "")))
    return "; ".join(parts)
