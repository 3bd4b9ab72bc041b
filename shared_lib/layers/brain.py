"""Brain layer: picks the arm, handles a pending confirmation's answer, or asks for a
proposal (LLM arm, ``shared_lib.brain.llm_arm``; or the legacy keyword brain). It
proposes; it decides nothing.

An instant OFF of auto-approve (``/auto off``, done by the context layer) is answered first,
from the catalogue, before the kill switch and before a pending confirmation's answer.

Arms: ``kill_switch`` (fixed message), ``state`` (an answer to a pending confirmation,
seed §5.1.7), ``fast_path`` (a trivial greeting, or the router's fixed answer: no LLM
call), ``llm``, ``legacy`` (the control arm, and the fallback when no LLM is configured).

The router's decision (``turn.route``, seed 003) comes first after the kill switch: an input
of only ``/local`` or ``/cloud`` is confirmed, and CODE refused while local-only is answered
with the way out (``/cloud``), both from the persona's catalogue. A local-only turn takes the
LLM arm on a local peer (``PeerRouter.local_serving``: the first healthy local peer routed for the
proposal; the router refuses every cloud peer of such a turn), and the legacy brain answers when
there is none, saying why (``route.local_only.no_local_peer``, ``.local_peer_unhealthy``, or
``.local_peer_failed``: the local call failed). A turn whose route's profile says no cloud model
may serve it (``cloud: false``, ``route.no_cloud``) takes the legacy arm.
The brain reads the input after its leading commands (``Turn.brain_text``).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from shared_lib.brain import legacy, llm_arm, route_profile
from shared_lib.brain.config import load_brain_config
from shared_lib.brain.llm_brain import fixed_text
from shared_lib.brain.vault import store_vault
from shared_lib.errors import BrainError
from shared_lib.layers.base import Layer, Outcome
from shared_lib.peers.router import local_serving
from shared_lib.privacy.sanitizer import Sanitizer
from shared_lib.turn.envelope import ProposalSection, Turn

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime

__all__ = ["LAYER", "core", "fixed_text", "kill_switch", "route_answer", "run"]


def run(turn: Turn, rt: Runtime) -> Outcome:
    """The brain stage (``rt.stages["brain"]``: its answer steps, then ``core``), timed."""
    if turn.step > 0:  # a later step proposes afresh; the earlier ones are in turn.loop.steps
        turn.proposal = ProposalSection()
    t0 = time.perf_counter()
    try:
        return rt.stages["brain"].run(turn, rt)
    finally:
        turn.proposal.duration_ms = round((time.perf_counter() - t0) * 1000, 3)


def kill_switch(turn: Turn, rt: Runtime) -> Outcome | None:
    """An answer step: the kill switch's fixed message."""
    if not turn.flags.kill_switch:
        return None
    turn.proposal.arm = "kill_switch"
    turn.proposal.proposal = fixed_text(
        rt.persona.message("kill_switch"), "緊急停止中のため固定メッセージで応答する"
    )
    return Outcome("kill_switch", reason_code="flags.KILL_SWITCH")


def core(turn: Turn, rt: Runtime) -> Outcome:
    """A proposal: the LLM arm, or the legacy brain (the control arm, and when no cloud model may serve)."""
    sec = turn.proposal
    arm = turn.brain_arm
    profile = route_profile.profile(turn)
    cloud = not turn.route.local_only and profile.cloud
    if arm == "llm" and rt.llm is not None and cloud:
        return llm_arm.run(turn, rt)
    local_why = "no_local_peer" if arm == "llm" else "legacy_arm"
    if arm == "llm" and turn.route.local_only:
        peer, local_why = local_serving(rt.llm, "proposal")
        if peer is not None:
            outcome = llm_arm.run(turn, rt)
            if outcome.outcome != "llm_error":
                return outcome
            local_why = "local_peer_failed"  # the error stays on the turn; the legacy brain answers
    sec.arm = "legacy"
    offered = route_profile.offered(rt.registry, profile)  # the route's tools, as the LLM arm's
    sec.proposal = legacy.propose(turn.brain_text(), registry=offered, persona=rt.persona)
    if sec.proposal.tool_calls:
        _keep_own_values(turn, rt)
    if turn.route.local_only:
        reason = f"route.local_only.{local_why}"
    elif not cloud:
        reason = "route.no_cloud"
    else:
        reason = "legacy" if arm == "legacy" else "legacy.no_llm"
    return Outcome("proposed", reason_code=reason, detail=sec.proposal.output_type)


# Why the brain answers from the catalogue, by persona message (recorded as the reasoning).
_ROUTE_ANSWERS = {
    "route.code_local_only": "ローカル限定中にコーディングを求められたので、実行せず解除方法（/cloud）を案内する",
    "route.local_on": "ローカル限定モードに切り替えたことを伝える（LLMは呼ばない）",
    "route.local_off": "ローカル限定モードを解除したことを伝える（LLMは呼ばない）",
}


def route_answer(turn: Turn, rt: Runtime) -> Outcome | None:
    """An answer step: a catalogue answer to what the router decided, or ``None`` when the brain proposes."""
    r = turn.route
    if r.refused == "code_needs_cloud" and r.guidance:
        key = r.guidance
    elif r.text is not None and not r.text.strip() and {"/local", "/cloud"} & set(r.commands):
        key = "route.local_on" if r.local_only else "route.local_off"
    else:
        return None
    if not rt.persona.has(key):  # a persona without it: the brain answers (no LLM while local-only)
        return None
    turn.proposal.arm = "fast_path"
    turn.proposal.proposal = fixed_text(rt.persona.message(key), _ROUTE_ANSWERS.get(key, key))
    return Outcome("routed", reason_code=key, detail=r.route)


def _keep_own_values(turn: Turn, rt: Runtime) -> None:
    """The legacy arm proposes with the user's real values; a confirmation stores its pending
    action masked (``confirmation``), so the vault keeps them for the executor, as the LLM arm's does."""
    entries = Sanitizer.default().mask(turn.brain_text())[1]
    try:
        ttl = load_brain_config().vault.ttl_minutes
        store_vault(rt.store, turn, entries, now=rt.clock(), ttl_minutes=ttl, cipher=rt.cipher(turn.org_id))
    except Exception as exc:  # the action still runs now; only a later approval loses the values
        turn.add_error(
            BrainError.of(
                "memory_access_error", f"vault: {type(exc).__name__}", layer="brain", source="store"
            )
        )


LAYER = Layer("brain", "proposed", run)
