"""Evidence for the promotion gates, written with the product's own models.

Served-turn records are ``shared_lib.observability.records.ObservabilityRecord`` documents at
``orgs/{org}/observability/{turn_id}``; shadow comparisons are what
``shared_lib.rollout.comparison.compare`` makes of a served record and its candidate, stored
at ``comparison_path``. Works on any store (memory or the Firestore emulator).
"""

from __future__ import annotations

import itertools
from datetime import datetime
from typing import Any

from shared_lib.observability.records import ErrorRow, ObservabilityRecord, SelectedTool
from shared_lib.ports import Store
from shared_lib.rollout.comparison import compare, comparison_path

ORG = "acme"
_ids = itertools.count(1)


def record(
    at: datetime,
    *,
    arm: str = "llm",
    org: str = ORG,
    failed: bool = False,
    duration_ms: float = 1200.0,
    cost_usd: float = 0.01,
    tool: str = "create_task",
    shadow: bool = False,
) -> ObservabilityRecord:
    """One served turn (or, with ``shadow``, a candidate) of ``arm`` at ``at``."""
    turn_id = f"T{next(_ids)}"
    errors = (
        [
            ErrorRow(
                code="db_connection_error",
                category="system_error",
                severity="high",
                layer="executor",
                message="down",
            )
        ]
        if failed
        else []
    )
    return ObservabilityRecord(
        event_id=f"{'shadow_candidate' if shadow else 'turn_record'}-{turn_id}-0",
        kind="shadow_candidate" if shadow else "turn_record",
        layer="observer",
        occurred_at=at,
        org_id=org,
        turn_id=turn_id,
        record_id=turn_id,
        timestamp=at,
        recorded_at=at,
        user_id="u1",
        organization_id=org,
        room_id="r1",
        channel="http",
        conversation_key=f"{org}/r1/u1",
        input_message="田中さんに見積書のタスクをお願い",
        llm_model="claude-sonnet-4-6" if arm == "llm" else "legacy",
        arm=arm,
        flags_arm=arm,
        flags_reason="SPLIT",
        flags_version="v1",
        llm_reasoning="依頼なのでタスクを作る",
        llm_confidence=0.9,
        output_type="tool_call",
        selected_tools=[SelectedTool(tool_name=tool, parameters={"title": "見積書"})],
        guardian_action="allow",
        guardian_reason="pass",
        auth_result="allowed",
        execution_success=not failed,
        final_response="エラーが発生しました" if failed else "タスクを作成しました",
        response_kind="error" if failed else "reply",
        total_duration_ms=duration_ms,
        llm_duration_ms=duration_ms * 0.6 if arm == "llm" else 0.0,
        tool_duration_ms=50.0,
        timings={"brain": duration_ms * 0.6, "guardian": 5.0, "authorizer": 5.0},
        cost_usd=cost_usd,
        errors=errors,
        shadow=shadow,
    )


def seed_records(store: Store, at: datetime, count: int, **fields: Any) -> list[ObservabilityRecord]:
    """``count`` served records at ``at``, stored where the observer stores them."""
    out = []
    for _ in range(count):
        rec = record(at, **fields)
        store.set(f"orgs/{rec.organization_id}/observability/{rec.record_id}", rec.store_doc())
        out.append(rec)
    return out


def seed_comparisons(
    store: Store, at: datetime, count: int, *, disagree: int = 0, org: str = ORG
) -> list[dict[str, Any]]:
    """``count`` shadow comparisons at ``at`` (legacy served, LLM candidate); the first
    ``disagree`` of them pick another tool."""
    out = []
    for n in range(count):
        served = record(at, arm="legacy", org=org, cost_usd=0.0)
        candidate = record(
            at, arm="llm", org=org, shadow=True, tool="list_tasks" if n < disagree else "create_task"
        )
        row = compare(served.store_doc(), candidate.store_doc() | {"turn_id": served.record_id})
        store.set(comparison_path(org, served.record_id), row)
        out.append(row)
    return out
