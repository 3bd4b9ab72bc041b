"""The background memory layer (seed 001 §17–22): work on memory that no reply waits for.

It subscribes to ``turns.completed`` (a turn was answered: its conversation may need
compaction, ``context.compaction``, and the turn may be fine-tuning data, ``finetune.staging``) and to ``memory.jobs`` (job messages). It is off the reply's
critical path by construction: the responder has already sent the reply when the completed
turn arrives here, and nothing downstream waits for this target.

Job messages are JSON ``{"job": name, "org_id": org, "job_id": id, ...}`` with the attribute
``kind=memory_job``; ``jobs(rt)`` maps a name to its handler (``JOBS``, this layer's own, and
the feature rooms' the runtime holds: the memory stories' digest and tagging) (``POST /tasks/memory/<job>`` on the
admin service publishes one message per organisation). A job runs once per ``job_id``: its
``memory_jobs`` document says it is done, and a redelivery answers ``duplicate``. Handlers are
idempotent themselves (a compaction finds the conversation already compacted), so a crash
between the work and the record only repeats work that changes nothing.

A conversation's usage is measured against the context window of the model its turns are served
by (``budget``: the peers' configuration, ``PeersConfig.serving_window``; Claude's 200 000
tokens, the local stack's fakes' 32 768), with what every proposal request carries counted in
(``carried_tokens``: the Base system prompt, the tools, the context's token budget). What leaves
the window is kept in long-term memory first (``memory.fact_memory``), embedded by the
runtime's embedder and sealed with its vault key, for the organisation's retention.

Every LLM call is bound to the organisation (``callctx.job_context``); a conversation set to
``/local`` keeps its summaries off the cloud peers (the local-only guard refuses them).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import timedelta
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from shared_lib import collections
from shared_lib.adapters.scoped import scoped
from shared_lib.brain.prompt import proposal_tools, stable_system
from shared_lib.context.budget import estimate_tokens
from shared_lib.context.compaction import Compaction, Compactor, compact, pending_level
from shared_lib.context.memory_config import MemoryConfig, load_memory_config
from shared_lib.context.summary_prompt import Voice
from shared_lib.errors import LLMError
from shared_lib.layers.base import Layer, Outcome
from shared_lib.memory.fact_memory import Keeper
from shared_lib.observability.logs import log_event
from shared_lib.peers.config import PeersConfig, load_peers
from shared_lib.state.session import load_session
from shared_lib.turn.callctx import job_context
from shared_lib.turn.envelope import Turn

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime

JOB_KIND = "memory_job"
JOB_TTL = timedelta(days=7)


def memory_config(rt: Runtime) -> MemoryConfig:
    return load_memory_config(rt.settings.memory_file)


@lru_cache(maxsize=8)
def _peers(setting: str | None) -> PeersConfig:
    return load_peers(setting)


_CARRIED: dict[tuple[int, int, int], int] = {}


def carried_tokens(rt: Runtime) -> int:
    """What every proposal request carries besides the conversation: the Base system prompt
    (persona and instructions), the tools and the context's token budget (estimated once per
    process: Base and the tools are the same bytes for every turn)."""
    key = (id(rt.persona), id(rt.registry), rt.settings.context_token_budget)
    if key not in _CARRIED:
        base = estimate_tokens(str(stable_system(rt.persona)["text"]))
        tools = estimate_tokens(json.dumps(proposal_tools(rt.registry), ensure_ascii=False))
        _CARRIED[key] = base + tools + rt.settings.context_token_budget
    return _CARRIED[key]


def budget(rt: Runtime, cfg: MemoryConfig, *, local_only: bool = False) -> tuple[int, int]:
    """(the window usage is measured against, the tokens always carried in it)."""
    if cfg.compaction.history_token_budget:
        return cfg.history_budget(0, 0)
    window = _peers(rt.settings.peers).serving_window(local_only=local_only)
    return cfg.history_budget(window, carried_tokens(rt))


def compactor(
    rt: Runtime, org_id: str, config: MemoryConfig | None = None, *, local_only: bool = False
) -> Compactor:
    cfg = config or memory_config(rt)
    ext = rt.hooks.persona_ext  # the organisation's extension, when the persona learning room lends it
    voice = (
        Voice.of(rt.persona.core(), ext(rt.store, org_id) if ext is not None else {})
        if cfg.compaction.use_persona_prompt
        else None
    )
    window, carried = budget(rt, cfg, local_only=local_only)
    return Compactor(
        config=cfg.compaction,
        budget=window,
        llm=rt.llm,
        model=rt.settings.fast_model,
        voice=voice,
        carried=carried,
        keeper=Keeper(rt.embedder, rt.cipher(org_id), rt.settings.retention(org_id)),
    )


def compact_conversation(
    rt: Runtime,
    org_id: str,
    conversation_key: str,
    *,
    local_only: bool = False,
    using: Compactor | None = None,
) -> Compaction:
    """Compact one conversation under its organisation's call context (``/local`` honoured).
    Below the threshold it costs two reads; the voice and the session are read only for work."""
    store = scoped(rt.store, org_id)
    cfg = memory_config(rt)
    window, carried = budget(rt, cfg, local_only=local_only)
    check = using or Compactor(cfg.compaction, window, None, "", carried=carried)
    if pending_level(store, org_id, conversation_key, check) == "none":
        return Compaction("none", 0.0, 0.0, False, "below_threshold")
    session = load_session(store, org_id, conversation_key, rt.clock())
    local = local_only or bool(session.get("local_only"))
    with job_context(org_id, "memory", conversation_key=conversation_key, local_only=local):
        try:
            using = using or compactor(rt, org_id, cfg, local_only=local)
            result = compact(store, org_id, conversation_key, using, now=rt.clock())
        except LLMError as exc:  # a refused or failed summary call: the next turn or sweep tries again
            log_event(
                "compaction_failed", layer="memory", org_id=org_id, error=f"{type(exc).__name__}: {exc}"
            )
            return Compaction("none", 0.0, 0.0, False, "llm_failed")
    if result.level != "none":
        log_event(
            "compaction",
            layer="memory",
            org_id=org_id,
            level=result.level,
            reason_code=result.reason,
            usage=round(result.usage, 3),
            after=round(result.after, 3),
            calls=result.calls,
            facts_written=result.detail.get("facts_written", 0),
        )
    return result


def on_turn(rt: Runtime, turn: Turn) -> str:
    """A completed turn, through the memory stage (``rt.stages["memory"]``): its conversation
    compacted if the usage asks for it (``core``); then the steps of the table: an event episode
    when it deserves one (memory stories), fine-tuning staging when the fixed rules say so. A turn
    the debounce absorbed is skipped: the burst's leading turn carries its words."""
    return rt.stages["memory"].run(turn, rt).outcome


# How far below the light threshold the envelope's measure must stay for the check to skip its
# reads (a share of the window). What the measure can miss: the masked form of a value this
# turn's words hold (a placeholder a few tokens longer than the value), and the messages of
# another turn of the same conversation appended after this turn's context read (a concurrent
# turn; the next turn of the conversation reads them and decides again). 0.05 is 1,638 tokens of
# the local window and 10,000 of Claude's; between 0.70 and the emergency level (0.95) lies
# five times that, and the ``compact`` sweep finds any conversation a turn left above 0.70.
ENVELOPE_MARGIN = 0.05


def clearly_below(turn: Turn, rt: Runtime) -> bool:
    """Whether the envelope alone says this turn leaves its conversation clearly below the light
    threshold: the context's measure of the window (``ContextSection.window_tokens``) with this
    turn's words and reply added, under the threshold by ``ENVELOPE_MARGIN``. ``False`` (read
    the conversation) when the context did not see the whole window, or the turn took more than
    one step (its steps' messages are not all on the envelope)."""
    seen = turn.context.window_tokens
    if seen is None or turn.step != 0:
        return False
    cfg = memory_config(rt)
    window, carried = budget(rt, cfg, local_only=turn.route.local_only)
    added = estimate_tokens(turn.inbound.text) + estimate_tokens(turn.response.text)
    return (carried + seen + added) / window < cfg.compaction.light_threshold - ENVELOPE_MARGIN


def core(turn: Turn, rt: Runtime) -> Outcome:
    if clearly_below(turn, rt):
        return Outcome("compaction_below_threshold", reason_code="envelope")
    result = compact_conversation(rt, turn.org_id, turn.conversation_key, local_only=turn.route.local_only)
    return Outcome(f"compaction_{result.reason}")


def absorbed(turn: Turn, rt: Runtime) -> Outcome | None:
    """An answer step: a turn the debounce absorbed keeps nothing here."""
    return Outcome("skipped") if turn.context.debounce.get("role") == "absorbed" else None


def with_result(outcome: Outcome, part: str) -> Outcome:
    """The stage's outcome with one more ``;``-separated part (what a step did)."""
    return Outcome(f"{outcome.outcome};{part}", reason_code=outcome.reason_code, detail=outcome.detail)


def sweep_compact(rt: Runtime, job: dict[str, Any]) -> dict[str, Any]:
    """The ``compact`` job: the organisation's recently active conversations, each compacted if it
    needs it (a turn event that never arrived here leaves work this finds)."""
    org = str(job["org_id"])
    cfg = memory_config(rt)
    params = cfg.job("compact")
    since = rt.clock() - timedelta(hours=float(params.get("active_hours", 24)))
    docs = scoped(rt.store, org, read_only=True).query(
        collections.collection_path("conversations", org=org),
        where=[("at", ">=", since)],
        limit=int(params.get("max_conversations", 200)),
    )
    using = compactor(rt, org, cfg)
    reasons: dict[str, int] = {}
    for _, doc in docs:
        key = str(doc.get("conversation_key") or "")
        if key:
            reason = compact_conversation(rt, org, key, using=using).reason
            reasons[reason] = reasons.get(reason, 0) + 1
    return {"conversations": len(docs), "reasons": reasons}


JobHandler = Callable[["Runtime", dict[str, Any]], dict[str, Any]]
# this layer's own jobs; the feature rooms' come from their manifests (``rt.memory_jobs``)
JOBS: dict[str, JobHandler] = {"compact": sweep_compact}


def jobs(rt: Runtime) -> Mapping[str, JobHandler]:
    """Every job this target runs, by name: its own, then those the runtime holds."""
    return {**JOBS, **rt.memory_jobs}


def job_message(
    job: str, org_id: str, job_id: str, *, day: str | None = None
) -> tuple[bytes, dict[str, str]]:
    """The bus message of one job (what the admin task publishes to ``memory.jobs``); ``day``
    (ISO, JST) names the day a daily job is for (the heartbeat's curation of yesterday)."""
    payload = {"job": job, "org_id": org_id, "job_id": job_id, **({"day": day} if day else {})}
    data = json.dumps(payload, ensure_ascii=False).encode()
    return data, {"kind": JOB_KIND, "job": job, "org_id": org_id, "job_id": job_id}


def run_job(rt: Runtime, payload: dict[str, Any]) -> str:
    """Run one job message once per ``job_id``; an unknown job is logged and dropped (no retry)."""
    name, org, job_id = str(payload.get("job")), str(payload.get("org_id")), str(payload.get("job_id"))
    handler = jobs(rt).get(name)
    if handler is None or not org or not job_id:
        log_event("memory_job_unknown", layer="memory", severity="WARNING", job=name, org_id=org)
        return "unknown_job"
    path = collections.path("memory_jobs", org=org, id=job_id)
    done = rt.store.get(path)
    if done is not None and done.get("status") == "done":
        log_event("duplicate_delivery", layer="memory", job=name, org_id=org, job_id=job_id)
        return "duplicate"
    result = handler(rt, payload)
    now = rt.clock()
    rt.store.set(
        path,
        {
            "job": name,
            "org_id": org,
            "status": "done",
            "result": result,
            "at": now,
            "expires_at": now + JOB_TTL,
        },
    )
    log_event("memory_job_done", layer="memory", job=name, org_id=org, job_id=job_id)
    return f"job_{name}"


def handle(rt: Runtime, data: bytes, attributes: dict[str, str]) -> str:
    """Dispatch on the message itself: a job, or a completed turn."""
    if attributes.get("kind") == JOB_KIND:
        return run_job(rt, json.loads(data))
    return on_turn(rt, Turn.from_message(data, attributes, rt.store))


LAYER = Layer("memory", None, receive=handle)
