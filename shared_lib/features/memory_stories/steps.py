"""The background memory layer's episodes and tags (seed 001 §21–22), wired to the runtime.

* ``daily_digest`` job (Cloud Scheduler → ``POST /tasks/memory/daily_digest`` → one job per
  organisation): the organisation's day (JST; the job's ``day`` when given) told as one
  episode, once per org-day (``memory.episodes.daily_digest``).
* ``tagging`` job (after the digest): today's interests, then the items due for tags
  (``memory.tagging.run_tagging``), once per org-day.
* A completed turn worth remembering (a task done, a goal reached, 「覚えておいて」) becomes an
  event episode once per turn (``memory.episodes.event_episode``).

A written episode is indexed as memory chunks of kind ``episode`` (``memory.index``), so memory
search finds it: an event episode is the person's own (private to them), a daily digest tells
the whole organisation's day and is read at level 6 only (``memory.episode_index``). Texts are
masked before the store and the model see them.
"""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING, Any

from shared_lib.context.memory_config import load_memory_config
from shared_lib.dates import JST
from shared_lib.memory import episode_index
from shared_lib.memory.episode_index import is_indexed
from shared_lib.memory.episodes import EpisodeOutcome, daily_digest, event_episode, get_episode
from shared_lib.memory.tagging import run_tagging
from shared_lib.memory.triggers import ToolFact, TurnFacts
from shared_lib.turn.envelope import Turn

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime


def index_episode(rt: Runtime, org_id: str, out: EpisodeOutcome, *, user_id: str | None) -> None:
    """Make an episode findable by memory search (``memory.episode_index``: its story, its tags,
    when it happened; an event episode its person's, a digest the top level's): a newly written
    one, and one a previous run wrote but did not get to index (killed in between: the rerun
    finds the episode there and its chunks missing)."""
    doc: dict[str, Any] | None = None
    if out.status == "written" and out.episode is not None:
        doc = {  # as stored, without reading it back: its values in clear, sealed again in its chunks
            **out.episode.model_dump(),
            "user_ids": [user_id] if user_id else [],
            "expires_at": rt.clock() + rt.settings.retention(org_id),
        }
    elif out.status == "exists" and out.episode_id and not is_indexed(rt.store, org_id, out.episode_id):
        doc = get_episode(rt.store, org_id, out.episode_id)
    if doc is not None:
        episode_index.index_episode(
            rt.store, rt.embedder, org_id, out.episode_id, doc, now=rt.clock(), cipher=rt.cipher(org_id)
        )


def _llm(rt: Runtime) -> Any:
    if rt.llm is None:
        from shared_lib.errors import ConfigError

        raise ConfigError("the memory jobs need an LLM (CHARTER_LLM=none)")
    return rt.llm


def digest_job(rt: Runtime, job: dict[str, Any]) -> dict[str, Any]:
    org = str(job["org_id"])
    now = rt.clock()
    day = date.fromisoformat(str(job["day"])) if job.get("day") else now.astimezone(JST).date()
    cfg = load_memory_config(rt.settings.memory_file)
    out = daily_digest(
        rt.store,
        _llm(rt),
        rt.persona,
        org,
        day,
        now,
        rt.settings.fast_model,
        retention=rt.settings.retention(org),
        config=cfg.story,
        cipher=rt.cipher(org),  # what the day's messages sealed stays sealed in its story, not lost
    )
    index_episode(rt, org, out, user_id=None)
    return {"status": out.status, "episode_id": out.episode_id, "reason": out.reason, "day": day.isoformat()}


def tagging_job(rt: Runtime, job: dict[str, Any]) -> dict[str, Any]:
    cfg = load_memory_config(rt.settings.memory_file)
    out = run_tagging(
        rt.store,
        _llm(rt),
        str(job["org_id"]),
        rt.clock(),
        rt.settings.fast_model,
        config=cfg.tagging,
        embedder=rt.embedder,
    )
    return {
        "status": out.status,
        "day": out.day,
        "items_processed": out.items_processed,
        "tags_added": out.tags_added,
        "tags_updated": out.tags_updated,
        "tag_changes": list(out.tag_changes),
        "reason": out.reason,
    }


def turn_facts(turn: Turn) -> TurnFacts:
    """What a completed turn tells the episode triggers: the words, the reply, every tool result."""
    results = [r for s in turn.loop.steps for r in s.results]
    results += [r for r in turn.execution.results if r not in results]  # the last step's, once
    return TurnFacts(
        turn_id=turn.turn_id,
        user_id=turn.user_id,
        text=turn.inbound.text,
        reply=turn.response.text,
        at=turn.created_at,
        user_name=turn.inbound.user_name or "",
        tools=tuple(ToolFact(r.tool_name, r.ok, dict(r.result), r.dry_run) for r in results),
    )


def on_turn_episode(rt: Runtime, turn: Turn) -> EpisodeOutcome | None:
    """An event episode of ``turn`` when it deserves one (never for a dry-run turn: the memory
    stage takes no shadow candidate)."""
    if turn.execution.dry_run or rt.llm is None:
        return None
    cfg = load_memory_config(rt.settings.memory_file)
    out = event_episode(
        rt.store,
        rt.llm,
        rt.persona,
        turn.org_id,
        turn_facts(turn),
        rt.clock(),
        rt.settings.fast_model,
        retention=rt.settings.retention(turn.org_id),
        config=cfg.story,
        cipher=rt.cipher(turn.org_id),  # what the person said to keep is sealed in the story, not lost
    )
    index_episode(rt, turn.org_id, out, user_id=turn.user_id)
    return out
