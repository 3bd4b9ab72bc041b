"""The peers' configuration: which LLM backends, in which order, for which purpose (seed 001 §6.2).

A ``PeersConfig`` is data: ``config/peers.json`` ships today's behaviour (one Anthropic peer
for every purpose); ``CHARTER_PEERS`` (a path, or inline JSON starting with ``{``) replaces it.

* ``peers``   — in priority order. A ``PeerSpec`` names its backend (``kind``), whether it runs
  on the company's own machines (``local``: the only peers a local-only turn may use), where it
  is (``base_url``, or ``base_url_setting``: the name of a ``Settings`` field holding it;
  ``region``/``project`` for Vertex), its key by the NAME of a ``Settings`` secret field
  (``api_key_setting``; never the key itself), the product's model names → its own
  (``models``), its limits (``max_context_tokens``, ``supports_parallel``) and its per-process
  concurrency (``concurrency`` calls in flight, ``queue_timeout`` seconds to wait for a slot).
  ``max_context_tokens`` is the model's context window: 200 000 for Claude (Sonnet, Opus and
  Haiku 4.x on the Anthropic API and on Vertex AI, without the long-context beta), the default;
  an OpenAI-compatible local model says its own (the adapter's default 32 768, the local stack's
  fakes 32 768). Compaction measures a conversation against the window of the peer that serves
  its turns (``serving_window``).
* ``routing`` — ``{purpose: [peer names in order]}`` for purposes of ``ports.PURPOSES``; a
  purpose not listed uses every peer in order.

>>> config = PeersConfig.parse('{"peers": [{"name": "a", "kind": "anthropic"},'
...     ' {"name": "v", "kind": "vertex", "region": "us-east5"}], "routing": {"summary": ["v"]}}')
>>> [p.name for p in config.route("proposal")], [p.name for p in config.route("summary")]
(['a', 'v'], ['v'])
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from shared_lib.errors import ConfigError
from shared_lib.ports import PURPOSES, PeerKind
from shared_lib.settings import Settings
from shared_lib.settings.config_files import parse_json_model

PEERS_FILE = Path(__file__).resolve().parent.parent / "config" / "peers.json"
_NAME = re.compile(r"[a-z][a-z0-9_-]{0,39}")


class PeerSpec(BaseModel):
    """One configured peer (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    kind: PeerKind
    local: bool = False
    base_url: str | None = None
    base_url_setting: str | None = None
    api_key_setting: str | None = None
    region: str | None = None
    project: str | None = None  # Vertex: the Google Cloud project (default: the settings' project)
    models: dict[str, str] = Field(default_factory=dict)
    max_context_tokens: int = Field(default=200_000, ge=1)
    supports_parallel: bool = True
    concurrency: int | None = Field(default=None, ge=1)  # calls in flight per process; None: no limit
    queue_timeout: float = Field(default=2.0, ge=0, le=60)

    @model_validator(mode="after")
    def _coherent(self) -> PeerSpec:
        if not _NAME.fullmatch(self.name):
            raise ValueError(f"peer name {self.name!r}: lower-case letters, digits, '-' and '_' (≤ 40)")
        if self.base_url and self.base_url_setting:
            raise ValueError(f"peer {self.name!r}: give base_url or base_url_setting, not both")
        if self.base_url_setting is not None and self.base_url_setting not in Settings.model_fields:
            raise ValueError(f"peer {self.name!r}: base_url_setting {self.base_url_setting!r} is no setting")
        if self.api_key_setting is not None and not _is_secret_field(self.api_key_setting):
            raise ValueError(
                f"peer {self.name!r}: api_key_setting {self.api_key_setting!r} is no secret setting"
            )
        if self.kind == "vertex" and not self.region:
            raise ValueError(f"peer {self.name!r}: a vertex peer needs its region")
        if self.kind == "openai_compatible" and not (self.base_url or self.base_url_setting):
            raise ValueError(f"peer {self.name!r}: an openai_compatible peer needs its base_url")
        return self

    def resolved_base_url(self, settings: Settings) -> str | None:
        if self.base_url_setting is not None:
            value = settings.secret(self.base_url_setting)
            return None if value is None else str(value)
        return self.base_url

    def api_key(self, settings: Settings) -> str | None:
        return settings.secret(self.api_key_setting) if self.api_key_setting else None


def _is_secret_field(name: str) -> bool:
    field = Settings.model_fields.get(name)
    return field is not None and (field.annotation is SecretStr or SecretStr in get_args(field.annotation))


class PeersConfig(BaseModel):
    """The peers in priority order and the routing per purpose (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    description: str = ""
    peers: list[PeerSpec] = Field(min_length=1)
    routing: dict[str, list[str]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _references(self) -> PeersConfig:
        names = [p.name for p in self.peers]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"duplicate peer name {', '.join(twice)}")
        for purpose, routed in self.routing.items():
            if purpose not in PURPOSES:
                raise ValueError(f"unknown purpose {purpose!r} in routing (purposes: {', '.join(PURPOSES)})")
            if not routed:
                raise ValueError(f"routing of {purpose!r} names no peer")
            unknown = [n for n in routed if n not in names]
            if unknown:
                raise ValueError(f"routing of {purpose!r} names unknown peer {', '.join(unknown)}")
            if len(set(routed)) != len(routed):
                raise ValueError(f"routing of {purpose!r} names a peer twice")
        return self

    @classmethod
    def parse(cls, text: str, source: str = "peers configuration") -> PeersConfig:
        """``text`` (JSON) as a configuration; ``ConfigError`` naming ``source`` when it is not one."""
        return parse_json_model(cls, text, source)

    def peer(self, name: str) -> PeerSpec:
        return next(p for p in self.peers if p.name == name)

    def route(self, purpose: str) -> list[PeerSpec]:
        """The peers ``purpose`` may use, in order (every peer when the routing does not list it)."""
        if purpose in self.routing:
            return [self.peer(n) for n in self.routing[purpose]]
        return list(self.peers)

    def serving_window(self, *, local_only: bool = False) -> int:
        """The context window of the peer a conversation's turns are served by: the first peer the
        proposal is routed to (a fallback serves only while it is down), or for a ``/local``
        conversation the first local one (no local peer: the first peer's, which then refuses)."""
        routed = self.route("proposal")
        local = [p for p in routed if p.local]
        return (local[0] if local_only and local else routed[0]).max_context_tokens

    def purposes_of(self, name: str) -> list[str]:
        """The purposes ``name`` serves, in ``ports.PURPOSES`` order."""
        return [p for p in PURPOSES if any(s.name == name for s in self.route(p))]

    def local_purposes(self) -> frozenset[str]:
        """The purposes some local peer serves: what a local-only turn may still ask a model for."""
        return frozenset(p for p in PURPOSES if any(s.local for s in self.route(p)))


def load_peers(setting: str | None = None) -> PeersConfig:
    """``CHARTER_PEERS``'s configuration: inline JSON (``{…``), a file, or the packaged default."""
    if setting is None or not setting.strip():
        return PeersConfig.parse(PEERS_FILE.read_text(encoding="utf-8"), PEERS_FILE.name)
    if setting.lstrip().startswith("{"):
        return PeersConfig.parse(setting, "CHARTER_PEERS")
    path = Path(setting)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"CHARTER_PEERS: cannot read {path} ({exc.strerror or exc})") from exc
    return PeersConfig.parse(text, str(path))
