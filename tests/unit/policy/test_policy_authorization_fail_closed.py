"""The Authorization Gate fails closed without ``assert``: a check that ``python -O`` strips
would let a malformed proposal through (or crash the layer) instead of denying it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.policy.authorization import authorize
from shared_lib.policy.directory import MemoryDirectory
from shared_lib.turn.proposal import Proposal, ToolCallProposal
from shared_lib.wiring.features import tool_registry
from tests.unit.policy.policy_fakes import tool_call

ROOT = Path(__file__).resolve().parents[3]
USERS = {"me": {"level": 6, "department_id": "hq"}}


def without_calls() -> Proposal:
    """A tool-call proposal with no calls: the model refuses it, ``model_construct`` does not."""
    valid = tool_call("view_all_users").root
    assert isinstance(valid, ToolCallProposal)
    return Proposal(root=ToolCallProposal.model_construct(**{**dict(valid), "tool_calls": []}))


def decide(proposal: Proposal, user_id: str):  # type: ignore[no-untyped-def]
    return authorize(
        proposal,
        store=MemoryStore(),
        org_id="acme",
        user_id=user_id,
        registry=tool_registry(),
        directory=MemoryDirectory.from_data(users=USERS, departments={"hq": {"parent": None}}),
    )


@pytest.mark.parametrize("user_id", ["me", "nobody"])
def test_a_tool_call_proposal_without_calls_is_denied_with_a_reason_code(user_id: str):
    # GIVEN a top-level user or an unknown one WHEN a proposal without tool calls reaches the gate
    decision = decide(without_calls(), user_id)
    # THEN it is denied, with a code, not allowed and not a crash
    assert decision.result == "denied"
    assert decision.reason_code == "level.insufficient"
    assert decision.details == {"tool_calls": 0}


def test_an_unknown_user_with_calls_is_still_denied_at_the_first_call():
    decision = decide(tool_call("view_all_users"), "nobody")
    assert (decision.result, decision.reason_code) == ("denied", "level.insufficient")
    assert decision.details == {"tool_name": "view_all_users"}


@pytest.mark.parametrize("package", ["shared_lib/policy", "shared_lib/state"])
def test_the_deciding_packages_hold_no_assert_statements(package: str):
    found = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in sorted((ROOT / package).rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Assert)
    ]
    assert found == []
