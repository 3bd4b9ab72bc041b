"""The heartbeat's curation of the daily log into episodes (seed 001 §17.3 メモリ整理: 日次ログのキュレーション).

The daily digest itself is the memory target's ``daily_digest`` job (``features.memory_stories``,
``memory.episodes.daily_digest``: the day's log told as one episode, written once per
organisation and day). The nightly scheduler job tells *today* at 23:30 (JST), so a day is
missed when that job failed, ran before the organisation's evening or was never run. Here the
heartbeat makes sure of *yesterday*: once per JST day (``heartbeat_ticks/curation-{day}``, a claim
taken before and completed after), for each organisation with a conversation since yesterday
began whose digest of yesterday is not there, it publishes that job for yesterday
(``job_id`` ``daily_digest-{org}-{day}-heartbeat``: the memory target runs a job id once). The
heartbeat triggers; it never calls the model itself.

Cost: on the first tick of a JST day outside the quiet hours, one claim, one query of the
conversations active since yesterday (``ORGS_SCANNED`` at most), one read per organisation (its
episode) and one publish per organisation missing it; every later tick of the day one read.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from shared_lib import collections
from shared_lib.dates import JST
from shared_lib.delivery.idempotency import Claims, ClaimState
from shared_lib.layers.memory import job_message
from shared_lib.memory.episodes import episode_id, episode_path
from shared_lib.observability.logs import log_event

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime

JOB = "daily_digest"
ORGS_SCANNED = 5000
LEASE = timedelta(minutes=10)
TTL = timedelta(days=3)


def job_id(org: str, day: str) -> str:
    return f"{JOB}-{org}-{day}-heartbeat"


def run(rt: Runtime, now: datetime) -> dict[str, Any]:
    """Yesterday's (JST) digest of every organisation that had a conversation, asked for once."""
    yesterday = now.astimezone(JST).date() - timedelta(days=1)
    day = yesterday.isoformat()
    claims = Claims(rt.store, ttl=TTL)
    path = collections.path("heartbeat_ticks", id=f"curation-{day}")
    if (rt.store.get(path) or {}).get("status") == claims.completed:  # every later tick of the day
        return {"day": day, "skipped": "done"}
    claim = claims.claim(path, now=now, lease=LEASE)
    if claim.state is not ClaimState.ACQUIRED:
        return {"day": day, "skipped": "done" if claim.state is ClaimState.COMPLETED else "running"}
    since = datetime(yesterday.year, yesterday.month, yesterday.day, tzinfo=JST)
    rows = rt.store.query("conversations", where=[("at", ">=", since)], group=True, limit=ORGS_SCANNED)
    orgs = sorted({str(d["org_id"]) for _, d in rows if d.get("org_id")})
    asked, curated = [], []
    for org in orgs:
        if rt.store.get(episode_path(org, episode_id(org, f"daily:{day}"))) is not None:
            curated.append(org)
            continue
        data, attributes = job_message(JOB, org, job_id(org, day), day=day)
        rt.bus.publish("memory", data, attributes, "")
        asked.append(org)
    result = {"day": day, "asked": asked, "already": len(curated)}
    claims.complete(path, now=rt.clock(), result=result, holder=claim.holder)
    log_event("heartbeat_curation", layer="admin", day=day, asked=len(asked), already=len(curated))
    return result
