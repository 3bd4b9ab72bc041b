"""The recall gate on the local stack (issue 38, seed 001 §14.5): the stable processes hear a fact,
a candidate of every layer beside them is asked about it through a smoke turn, and the gate
passes a candidate that remembers and refuses one whose context has lost the conversation.

The candidates are ``infra.local_candidates`` processes (``CHARTER_REVISION=candidate``); the
forgetful one is started with ``CHARTER_CONTEXT_SOURCES_OFF=recent_messages,summary`` (a setting
the local stack only accepts). The fake model answers a hand-over check from the conversation
its request carries (``infra.fake_llm.handover``), never from the store.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from infra import local_candidates, recall_gate
from infra.smoke_runner import LAYERS
from shared_lib.rollout.recall import RecallCode, normalise
from shared_lib.rollout.smoke import SMOKE_ORG
from tests.e2e import waits

FORGETFUL = {"CHARTER_CONTEXT_SOURCES_OFF": "recent_messages,summary"}


@pytest.fixture
def candidates(local_stack: Any, request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    """Candidates of every layer but admin, started with ``request.param`` as their extra environment."""
    root = Path(local_stack.root)
    state = local_candidates.start(root=root, env=request.param)
    try:
        yield state
    finally:
        local_candidates.stop(root=root)


def gate(local_stack: Any, candidates: dict[str, Any], run_id: str) -> recall_gate.GateResult:
    return recall_gate.run_recall_gate(
        local_stack.ingress_url,
        candidates["candidate_ingress_url"],
        local_stack.store,
        expect="candidate",
        run_id=run_id,
        timeout=waits.scaled(local_stack.budgets.turn),
    )


def records(local_stack: Any, result: recall_gate.GateResult) -> dict[str, dict[str, Any]]:
    return {
        name: local_stack.store.get(f"orgs/{SMOKE_ORG}/observability/{turn_id}") or {}
        for name, turn_id in result.turns.items()
    }


@pytest.mark.e2e
@pytest.mark.parametrize("candidates", [{}], indirect=True)
def test_a_candidate_that_remembers_the_conversation_passes(local_stack, candidates):
    # GIVEN candidates of every layer beside the stable processes, built like them
    # WHEN the gate seeds a conversation through the stable ingress and asks the candidate about it
    result = gate(local_stack, candidates, f"e2e-pass-{uuid.uuid4().hex[:8]}")

    # THEN the seed turns ran on the stable processes and the question on the candidates only, on the LLM arm
    assert result.problems == [], result.problems
    seen = records(local_stack, result)
    assert [seen[f"seed{i + 1}"]["revisions"] for i in range(2)] == [dict.fromkeys(LAYERS, "stable")] * 2
    assert (
        seen["recall"]["revisions"] == dict.fromkeys(LAYERS, "candidate") and seen["recall"]["smoke"] is True
    )
    assert seen["recall"]["arm"] == "llm"
    assert "recent_messages:skipped" not in json.dumps(
        seen["recall"]["trail"], ensure_ascii=False, default=str
    )
    # AND the candidate's reply names what only the seeded conversation said: the gate passes
    assert result.verdict is not None and result.verdict.code is RecallCode.RECALLED, result.verdict
    reply = normalise(seen["recall"]["final_response"])
    assert all(normalise(term) in reply for term in result.probe.key_terms)
    assert all(normalise(term) not in normalise(result.probe.question) for term in result.probe.key_terms)
    # AND the run is on record for an operator
    doc = local_stack.store.get(result.record_path)
    assert doc["passed"] is True and doc["code"] == "RECALLED" and doc["turns"] == result.turns


@pytest.mark.e2e
@pytest.mark.parametrize("candidates", [FORGETFUL], indirect=True)
def test_a_candidate_whose_context_lost_the_conversation_is_refused(
    local_stack, candidates, tmp_path, capsys, monkeypatch
):
    # GIVEN candidates whose context service reads no conversation history (the source cut)
    # AND the step's environment names the local stack (its webhook secrets sign the turns)
    monkeypatch.setenv("CHARTER_ENV", "local")
    report_file = tmp_path / "recall_gate.json"
    run_id = f"e2e-refuse-{uuid.uuid4().hex[:8]}"

    # WHEN the pipeline's step runs the gate against them
    code = recall_gate.main(
        [
            "--stable-url",
            local_stack.ingress_url,
            "--candidate-url",
            candidates["candidate_ingress_url"],
            "--expect-revision",
            "candidate",
            "--run-id",
            run_id,
            "--timeout",
            str(waits.scaled(local_stack.budgets.turn)),
            "--store",
            "firestore",
            "--project",
            local_stack.project,
            "--report-file",
            str(report_file),
        ]
    )

    # THEN the step fails before any traffic shift, saying why where an operator reads it
    err = capsys.readouterr().err
    assert code == 1, err
    shown = json.loads(report_file.read_text(encoding="utf-8"))
    assert shown["passed"] is False and shown["problems"] == []
    assert shown["code"] in {"DOES_NOT_KNOW", "ASKS_BACK", "MISSING_TERMS"}, shown
    assert f"recall gate FAILED ({shown['code']})" in err and "the stable revisions keep serving" in err
    doc = local_stack.store.get(f"rollout_recall_checks/{run_id}")
    assert doc["passed"] is False and doc["code"] == shown["code"] and doc["reply"] == shown["reply"]
    # AND every turn did run where it should: the seeds on stable, the question through every candidate
    recall = local_stack.store.get(f"orgs/{SMOKE_ORG}/observability/{shown['turns']['recall']}")
    assert recall["revisions"] == dict.fromkeys(LAYERS, "candidate") and recall["arm"] == "llm"
    # AND what the candidate lacked was the conversation: its context read no history
    assert "recent_messages:skipped" in json.dumps(recall["trail"], ensure_ascii=False, default=str)
    seed = local_stack.store.get(f"orgs/{SMOKE_ORG}/observability/{shown['turns']['seed1']}")
    assert seed["revisions"] == dict.fromkeys(LAYERS, "stable")
