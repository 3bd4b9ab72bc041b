"""Ports: the small protocols every layer depends on. Adapters in ``shared_lib.adapters``
are peers (cloud/emulator and embedded); the same contract tests run against each.

Paths in the store are Firestore-style, alternating collection and document ids and
scoped by organisation: ``orgs/{org}/sessions/{key}``.

>>> from shared_lib.adapters.memory_store import MemoryStore
>>> store = MemoryStore()
>>> store.create("orgs/acme/claims/t1", {"status": "done"})
True
>>> store.create("orgs/acme/claims/t1", {"status": "again"})
False
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Literal, Protocol, TypeVar, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

from shared_lib.errors import CharterError

T = TypeVar("T")
Doc = dict[str, Any]
Op = Literal["==", "!=", "<", "<=", ">", ">=", "in", "array_contains", "array_contains_any"]


class Transaction(Protocol):
    """Reads first, then writes; the store retries the whole function on contention."""

    def get(self, path: str) -> Doc | None: ...
    def set(self, path: str, data: Doc, *, merge: bool = False) -> None: ...
    def create(self, path: str, data: Doc) -> None:
        """Write a new document; the transaction fails with ``AlreadyExistsError`` if it exists."""
        ...

    def delete(self, path: str) -> None: ...


def read_together(txn: Transaction, paths: Sequence[str]) -> dict[str, Doc | None]:
    """``paths`` read in the transaction: one batched read (Firestore's ``get_all`` within it)
    where the adapter has one, each on its own where it has not; none for none."""
    unique = list(dict.fromkeys(paths))
    if not unique:
        return {}
    get_many = getattr(txn, "get_many", None)
    if get_many is None or len(unique) == 1:
        return {p: txn.get(p) for p in unique}
    got: dict[str, Doc | None] = get_many(unique)
    return got


class AlreadyExistsError(CharterError):
    """``create`` found the document already there (an idempotency key, an alert id)."""


class Store(Protocol):
    def get(self, path: str) -> Doc | None: ...
    def get_many(self, paths: Sequence[str]) -> dict[str, Doc | None]:
        """Documents whose paths are known, in one round trip (Firestore's ``get_all``): each
        path given to its document, or ``None`` when it does not exist.

        >>> from shared_lib.adapters.memory_store import MemoryStore
        >>> store = MemoryStore(); store.set("orgs/a/users/u1", {"level": 2})
        >>> store.get_many(["orgs/a/users/u1", "orgs/a/users/u2"])
        {'orgs/a/users/u1': {'level': 2}, 'orgs/a/users/u2': None}
        """
        ...

    def set(self, path: str, data: Doc, *, merge: bool = False) -> None: ...
    def set_many(self, writes: Sequence[tuple[str, Doc, bool]]) -> None:
        """``set`` each ``(path, data, merge)`` together: one round trip and one commit
        (Firestore's ``WriteBatch``), all or none. No reads and no conditions: for writes that
        need neither (a conversation's document and its new message)."""
        ...

    def create(self, path: str, data: Doc) -> bool:
        """Create atomically; ``False`` when the document already exists."""
        ...

    def delete(self, path: str) -> None: ...
    def query(
        self,
        collection: str,
        *,
        where: Sequence[tuple[str, Op, Any]] = (),
        order_by: str | None = None,
        descending: bool = False,
        limit: int | None = None,
        group: bool = False,
    ) -> list[tuple[str, Doc]]:
        """Documents of ``collection`` (a path), or of every collection with that id when ``group``."""
        ...

    def run_transaction(self, fn: Callable[[Transaction], T]) -> T: ...


class Vector(tuple[float, ...]):
    """An embedding held in a document field. Firestore stores it as a vector value (what
    ``find_nearest`` searches); the embedded stores keep the floats. Equal to its tuple."""

    __slots__ = ()


class VectorSearch(Protocol):
    """Nearest-neighbour search over a vector field of a collection (seed 001 §18)."""

    def find_nearest(
        self,
        collection: str,
        *,
        field: str,
        vector: Vector,
        limit: int,
        where: Sequence[tuple[str, Op, Any]] = (),
    ) -> list[tuple[str, Doc, float]]:
        """The ``limit`` documents of ``collection`` nearest ``vector`` by cosine distance
        (0 identical .. 2 opposite), nearest first, with that distance. Documents without the
        field are skipped; ``where`` filters by equality before ranking (on Firestore that
        needs the composite vector index ``terraform/modules/firestore`` declares)."""
        ...


EmbedKind = Literal["query", "document"]


class Embedder(Protocol):
    """Text to vectors (seed 001 §18.3). ``name`` is stored beside every vector: vectors of
    two models are never compared. Unit length, ``dimensions`` floats each."""

    name: str
    dimensions: int

    def embed(self, texts: Sequence[str], *, kind: EmbedKind) -> list[Vector]: ...


class Bus(Protocol):
    """Publish to a topic *key* of ``topology.json`` (``"proposed"``), ordered by ``ordering_key``."""

    def publish(
        self, topic_key: str, data: bytes, attributes: dict[str, str], ordering_key: str = ""
    ) -> str: ...


# What a call is for (seed 001 §6.2 peer routing): the peers' routing table is keyed by it.
Purpose = Literal["proposal", "phrasing", "critique", "evaluation", "classification", "summary"]
PURPOSES: tuple[str, ...] = get_args(Purpose)
CallType = Literal[
    "proposal", "integration", "self_critique", "shadow", "continuation", "routing", "evaluation", "summary"
]
# the purpose of a call type; a continuation keeps the purpose of the call it continues
CALL_PURPOSE: dict[str, Purpose] = {
    "proposal": "proposal",
    "shadow": "proposal",
    "continuation": "proposal",
    "integration": "phrasing",
    "self_critique": "critique",
    "routing": "classification",
    "evaluation": "evaluation",
    "summary": "summary",
}


class LLMRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    call_type: CallType = "proposal"
    # set from ``call_type`` when not given; kept by ``model_copy`` (a continuation keeps it)
    purpose: Purpose | None = None
    model: str
    max_tokens: int = Field(default=1024, ge=1, le=64000)
    system: list[dict[str, Any]] = Field(default_factory=list)
    tools: list[dict[str, Any]] = Field(default_factory=list)
    tool_choice: dict[str, Any] | None = None
    messages: list[dict[str, Any]]
    temperature: float | None = None
    stream: bool = False

    @model_validator(mode="after")
    def _purpose(self) -> LLMRequest:
        if self.purpose is None:
            self.purpose = CALL_PURPOSE[self.call_type]
        return self


class LLMUsage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0


class LLMResponse(BaseModel):
    model_config = ConfigDict(extra="forbid")
    content: list[dict[str, Any]]
    stop_reason: str | None
    model: str
    usage: LLMUsage = Field(default_factory=LLMUsage)
    duration_ms: float = 0.0
    attempts: int = 1  # HTTP attempts under the adapter's retry policy
    interruptions: int = 0  # streams cut before message_stop (retried or salvaged)
    salvaged: bool = False  # the answer is the complete text received before a stream was cut
    peer: str = ""  # the peer that answered (set by the peer router; "" for a bare adapter)
    # peers tried before the one that answered, in order: {"peer": name, "reason": why skipped or failed}
    fallbacks: list[dict[str, str]] = Field(default_factory=list)
    call_id: str | None = None  # the LLM call log's entry of this answer (``orgs/{org}/llm_calls/{id}``)

    def tool_uses(self, name: str | None = None) -> list[dict[str, Any]]:
        return [
            b for b in self.content if b.get("type") == "tool_use" and (name is None or b.get("name") == name)
        ]

    def text(self) -> str:
        return "".join(str(b.get("text", "")) for b in self.content if b.get("type") == "text")


class LLM(Protocol):
    def complete(self, request: LLMRequest) -> LLMResponse:
        """One model call with the adapter's retry policy; raises ``LLMError`` when it gives up."""
        ...


PeerKind = Literal["anthropic", "vertex", "openai_compatible"]


class PeerHealth(BaseModel):
    """One health probe of a peer (seed 001 §6.3): what every instance reads from the store."""

    model_config = ConfigDict(extra="forbid")
    healthy: bool
    checked_at: datetime
    latency_ms: float = 0.0
    reason: str = ""  # why unhealthy: a content-free description (``APIStatusError status=529``)


class LLMPeer(Protocol):
    """One LLM backend (seed 001 §6.1): an ``LLM`` with a name, its limits and a health probe.

    ``complete`` keeps the product's contract whatever the wire (Anthropic-shaped content
    blocks: ``text`` and ``tool_use``; the adapter maps another API's tool calls to them) and
    raises ``LLMError`` when its retry policy gives up. ``health`` makes one cheap call with no
    retries and never raises.
    """

    name: str
    kind: PeerKind
    local: bool  # runs on the company's own machines: the only peers a local-only turn may use
    max_context_tokens: int
    supports_parallel: bool

    def complete(self, request: LLMRequest) -> LLMResponse: ...

    def health(self) -> PeerHealth: ...


class OutboundReply(BaseModel):
    model_config = ConfigDict(extra="forbid")
    channel: str
    org_id: str
    room_id: str
    thread_id: str | None = None
    user_id: str
    reply_handle: dict[str, str] = Field(default_factory=dict)
    text: str
    idempotency_key: str


class SendResult(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ok: bool
    provider_message_id: str | None = None
    status: int | None = None
    error: str | None = None
    parts: int = 1


class Channel(Protocol):
    name: str

    def send(self, reply: OutboundReply) -> SendResult: ...
