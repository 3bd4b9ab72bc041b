"""Delegation (seed 001 §15, 002 §6): hand a bounded task to a sub-agent of one's own.

``delegate_task`` writes the job (``shared_lib.features.jobs.state``) inside the executor's effect
transaction, ``queued``, with the limits of ``config/jobs.json``; the LLM may only ask for fewer
steps. The job's turn is published once the effect committed (``features.jobs.steps``); it runs
as the requester, so it may do only what the requester may. A job's own turn never delegates.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from shared_lib.features.jobs import state as agent_jobs
from shared_lib.ports import Transaction
from shared_lib.privacy.sanitizer import Sanitizer
from shared_lib.tools.handlers.base import Params, preview, require_text, writer
from shared_lib.tools.registry import ToolContext, ToolInputError


class DelegateTaskParams(Params):
    task: str = Field(
        min_length=1, max_length=500, description="任せる仕事の内容（何を調べて、何を報告するか）"
    )
    max_steps: int | None = Field(
        default=None, ge=1, le=20, description="使ってよい手順の数（決まった上限より少なくだけ）"
    )


def parent_turn_id(call_id: str) -> str:
    """The delegating turn of a call id (``{turn}-{step}-{index}``)."""
    parts = call_id.rsplit("-", 2)
    return parts[0] if len(parts) == 3 else call_id


def delegate_task(p: DelegateTaskParams, ctx: ToolContext, txn: Transaction | None) -> dict[str, Any]:
    if ctx.job_id:  # depth 1: the guardian and the gate refuse it before it gets here
        raise ToolInputError("任された仕事からさらに任せることはできません", key="job_nested", field="task")
    task = require_text(p.task, "task")
    limits = agent_jobs.load_limits()
    steps = min(p.max_steps or limits.max_steps, limits.max_steps)
    job_id = agent_jobs.job_id_for(ctx.turn_id)
    if ctx.dry_run:
        return preview("delegate_task", task=task, max_steps=steps)
    out = writer(ctx, txn)
    if out.get(agent_jobs.job_path(ctx.org_id, job_id)) is None:
        if agent_jobs.live_count(ctx.store, ctx.org_id) >= limits.max_concurrent_per_org:
            raise ToolInputError(
                "いま進めている仕事が多すぎます。終わってからもう一度お願いします",
                key="job_too_many",
                field="task",
            )
        job = agent_jobs.new_job(
            job_id=job_id,
            org_id=ctx.org_id,
            requester=ctx.user_id,
            task=Sanitizer.default().mask_stored(task),
            parent={
                "turn_id": parent_turn_id(ctx.turn_id),
                "room_id": ctx.room_id,
                "channel": ctx.channel,
                "conversation_key": ctx.conversation_key,
            },
            limits=limits,
            max_steps=steps,
            now=ctx.now,
        )
        out.set(agent_jobs.job_path(ctx.org_id, job_id), job)
    return {"job_id": job_id, "task": task, "max_steps": steps, "status": "queued"}
