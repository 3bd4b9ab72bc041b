"""A delegated job as the ``delegate_task`` handler creates it (seed 001 §15.5): its id, its
document (``queued``) and the limits of ``config/jobs.json``. The job's status machine and the
watchdog are ``shared_lib.features.jobs.state`` (above this floor: it re-exports these).

The report goes where the parent's reply went (``keep_handle``/``reply_handle``): the job keeps
the parent's reply handle, its addresses (a Slack thread, a LINE push target) as they are and
the rest (a plain-HTTP ``callback_url`` may carry a token) sealed with the vault's key, as the
ingress keeps a debounced message; without a key that rest is not kept. A LINE reply token is
never kept: the parent's own reply used it (the report is pushed).
"""

from __future__ import annotations

import hashlib
import json
import logging
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from cryptography.fernet import InvalidToken, MultiFernet
from pydantic import BaseModel, ConfigDict, Field

from shared_lib.collections import collection_path, path
from shared_lib.ports import Store
from shared_lib.settings.config_files import parse_json_model

log = logging.getLogger(__name__)
JOBS_FILE = Path(__file__).resolve().parent.parent / "config" / "jobs.json"
LIVE: frozenset[str] = frozenset({"queued", "running"})
DELEGATE_TOOL = "delegate_task"
# a reply handle's addresses (``shared_lib.channels``): kept as they are
ADDRESSES = frozenset(
    {"channel", "thread_ts", "to", "group_id", "room_id", "user_id", "account_id", "message_id"}
)
SINGLE_USE = frozenset({"reply_token"})  # LINE: spent by the parent's own reply


class JobLimits(BaseModel):
    """``config/jobs.json``: the most a job may spend (seed 001 §15.5)."""

    model_config = ConfigDict(extra="forbid")

    description: str = ""
    max_steps: int = Field(default=6, ge=1, le=20)
    max_seconds: int = Field(default=300, ge=10)
    max_cost_usd: float = Field(default=0.5, ge=0)
    alive_timeout_seconds: int = Field(default=120, ge=10)
    republish_after_seconds: int = Field(default=60, ge=5)
    max_concurrent_per_org: int = Field(default=4, ge=1)
    sweep_limit: int = Field(default=100, ge=1)


def load_limits(file: Path | None = None) -> JobLimits:
    source = file or JOBS_FILE
    return parse_json_model(JobLimits, source.read_text(encoding="utf-8"), str(source))


def job_id_for(call_id: str) -> str:
    """The job a delegating call names (``{turn}-{step}-{index}``): a redelivery names the same."""
    return "job-" + hashlib.sha256(f"job:{call_id}".encode()).hexdigest()[:16]


def turn_id_for(job_id: str) -> str:
    """The job's own turn: publishing it twice is deduplicated by the layers' claims."""
    return f"t-{job_id}"


def job_of_turn(turn_id: str) -> str | None:
    """The job a turn id names (``turn_id_for``'s inverse); ``None`` for a person's own turn."""
    rest = turn_id.removeprefix("t-")
    return rest if rest != turn_id and rest.startswith("job-") else None


def job_path(org_id: str, job_id: str) -> str:
    return path("agent_jobs", org=org_id, id=job_id)


def new_job(
    *,
    job_id: str,
    org_id: str,
    requester: str,
    task: str,
    parent: dict[str, str],
    limits: JobLimits,
    max_steps: int,
    now: datetime,
) -> dict[str, Any]:
    """A queued job's document; ``parent``: turn_id, room_id, channel, conversation_key."""
    return {
        "job_id": job_id,
        "org_id": org_id,
        "user_id": requester,
        "task": task,
        "status": "queued",
        "reason": "",
        "parent_turn_id": parent["turn_id"],
        "room_id": parent["room_id"],
        "channel": parent["channel"],
        "conversation_key": parent["conversation_key"],
        "turn_id": turn_id_for(job_id),
        "max_steps": max(1, min(max_steps, limits.max_steps)),
        "max_cost_usd": limits.max_cost_usd,
        "ends_at": now + timedelta(seconds=limits.max_seconds),
        "created_at": now,
        "heartbeat_at": None,
        "steps": 0,
        "cost_usd": 0.0,
        "result": None,
    }


def live_count(store: Store, org_id: str) -> int:
    docs = store.query(collection_path("agent_jobs", org=org_id), where=[("status", "in", list(LIVE))])
    return len(docs)


def keep_handle(handle: dict[str, str], cipher: MultiFernet | None) -> dict[str, Any]:
    """The job's fields that keep the parent's reply ``handle`` (merged into its document)."""
    plain = {k: v for k, v in handle.items() if k in ADDRESSES}
    rest = {k: v for k, v in handle.items() if k not in ADDRESSES | SINGLE_USE}
    kept: dict[str, Any] = {"reply_handle": plain}
    if rest and cipher is not None:
        kept["reply_handle_sealed"] = cipher.encrypt(json.dumps(rest).encode()).decode()
    elif rest:
        log.warning("no vault key: the job's report goes without %s", sorted(rest))
    return kept


def reply_handle(job: dict[str, Any], cipher: MultiFernet | None) -> dict[str, str] | None:
    """The reply handle the job's report is sent with (``keep_handle``'s inverse); ``None`` when
    a process without the vault's key holds a sealed one (the report waits for the sweep)."""
    handle = {str(k): str(v) for k, v in (job.get("reply_handle") or {}).items()}
    sealed = job.get("reply_handle_sealed")
    if sealed and cipher is None:
        return None
    if sealed and cipher is not None:
        try:
            handle |= {str(k): str(v) for k, v in json.loads(cipher.decrypt(str(sealed).encode())).items()}
        except InvalidToken:  # a key rotated out: the report goes to the addresses alone
            log.warning("job %s: its sealed reply handle no longer opens", job.get("job_id"))
    return handle
