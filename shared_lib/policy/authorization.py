"""Authorization Gate (seed 000 §6.4): independent of anything the LLM said.

The user's level comes from the directory in the store, never from the proposal; each
tool's minimum level from the registry. Any error reading the directory denies.
"""

from __future__ import annotations

from shared_lib.decisions import AuthDecision
from shared_lib.ports import Store
from shared_lib.proposal import Proposal, ToolCallProposal
from shared_lib.tools.registry import ToolRegistry


def authorize(proposal: Proposal, *, store: Store, org_id: str, user_id: str,
              registry: ToolRegistry) -> AuthDecision:
    p = proposal.root
    if not isinstance(p, ToolCallProposal):
        return AuthDecision.not_applicable()
    try:
        user = store.get(f"orgs/{org_id}/users/{user_id}")
    except Exception:
        return AuthDecision.denied("directory.unavailable", message="access_control_error")
    if user is None:
        return AuthDecision.denied("level.insufficient", user_level=0, required_level=1)
    level = int(user.get("level", 0))
    required = max(registry.min_level(c.tool_name) for c in p.tool_calls)
    if level < required:
        return AuthDecision.denied("level.insufficient", user_level=level, required_level=required)
    return AuthDecision.allowed(user_level=level, required_level=required)
