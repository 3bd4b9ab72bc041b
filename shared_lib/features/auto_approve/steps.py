"""Auto-approve in the turn (seed 002 §6.4): the guardian's hook and the instant-OFF chat command.

Four entry points, called by layers owned elsewhere (the rules are ``shared_lib.features.auto_approve.store``):

* ``apply(turn, rt, verdict)`` — guardian layer, after the tree. A confirmation that a live
  grant covers (and the deployment's switch allows, no hard-require kind applies, not a double
  confirmation, the authorization gate allows) becomes ``allow`` with reason
  ``approval.auto_approved``, and the executor runs it. Anything else: the confirmation stands.
* ``record(turn, rt)`` — guardian layer, an after step: the job of an auto-approved verdict is
  recorded ``auto_approved`` (``state.jobs``) with its ``approval.auto_approved`` event. A shadow
  turn takes the same decision and, running no after step, records nothing.
* ``chat_command(turn, rt)`` — context layer, first thing in the turn. ``/auto off`` or
  「自動承認オフ」 stops auto-approval of the sender's own requests under every grant, the
  organisation's included, until their own ``/auto on`` (``auto_approve.opt_out``), and ends
  their personal grants; a person of level ≥ ``ORG_OFF_LEVEL`` also ends the organisation's
  grants. ``/auto on`` or 「自動承認オン」 lifts only the sender's own OFF: it makes no grant
  (grants are an operator's, ``charter approvals auto on``) and changes nothing of anyone
  else. The outcome is kept on ``turn.context.auto_off``.
* ``answer_command(turn, rt)`` — brain layer, before anything else (even an answer to a pending
  confirmation, which stays pending): the persona's catalogue tells what was turned off or on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shared_lib.brain.llm_brain import fixed_text
from shared_lib.brain.models import flags_document
from shared_lib.features.approvals import store as jobs
from shared_lib.features.auto_approve import store as auto_approve
from shared_lib.layers.authorizer import gate
from shared_lib.policy.effective import Policy
from shared_lib.state.gate import summary
from shared_lib.tools.directory import get_person
from shared_lib.turn.decisions import Outcome, Verdict
from shared_lib.turn.envelope import Turn
from shared_lib.turn.proposal import Proposal, ToolCallProposal

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime

# Who may turn off the organisation's grants from a chat: seed 002 names no level, so the first
# level of seed 000 §5.4.3 whose reach is the whole organisation (5, 管理部/取締役: 全組織).
ORG_OFF_LEVEL = 5


def switch(rt: Runtime) -> auto_approve.Switch:
    """The flags document's ``auto_approve`` block; an unreadable document switches it off."""
    doc = flags_document(rt)
    if doc is None:
        return auto_approve.Switch()
    a = doc.auto_approve
    return auto_approve.Switch(a.enabled, tuple(a.tools), a.max_level, a.ttl_minutes)


def job_id(turn: Turn) -> str:
    """A job id stable under redelivery: derived from the turn and its step (``J-7K2M9Q``)."""
    return jobs.job_id_for(turn.turn_id, turn.step)


def apply(turn: Turn, rt: Runtime, verdict: Verdict) -> Verdict:
    proposal = turn.proposal.proposal
    if verdict.action != "confirm" or verdict.double_confirmation or proposal is None:
        return verdict  # never a block, never a double confirmation: nothing to read
    if turn.proposal.approval:
        return verdict  # an answer to a pending confirmation stays in the confirmation flow
    sw, now = switch(rt), rt.clock()
    required = rt.policy.approval.required_by_default  # false: the policy itself approves
    if required and not sw.enabled:
        return verdict
    grants = auto_approve.live_grants(rt.store, turn.org_id, now, user_id=turn.user_id) if sw.enabled else []
    if required and not grants:  # none, or the person turned auto-approval of their requests off
        return verdict
    if not required and auto_approve.opted_out(rt.store, turn.org_id, turn.user_id):
        return verdict.with_details(auto_approve="opted_out")
    decision = auto_approve.decide(
        verdict,
        proposal,
        grants,
        policy=rt.policy.approval,
        switch=sw,
        route=turn.route.route,
        user_id=turn.user_id,
        tool_levels={c.tool_name: rt.registry.min_level(c.tool_name) for c in proposal.tool_calls},
    )
    if decision.grant is None:
        return verdict.with_details(auto_approve=decision.reason, hard_require=list(decision.hard_require))
    if not _authorized(turn, rt, proposal):
        return verdict.with_details(auto_approve="authorization")
    grant_id = str(decision.grant["grant_id"])
    allowed = Verdict(
        action="allow",
        reason_code=auto_approve.AUTO_APPROVED,
        priority=0,
        message=str(rt.policy.messages.get(auto_approve.AUTO_APPROVED, "")),
        details={
            **verdict.details,
            "grant_id": grant_id,
            "job_id": job_id(turn),
            "auto_approved_from": verdict.reason_code,
        },
    )
    return allowed


def record(turn: Turn, rt: Runtime) -> None:
    """The approval job of a confirmation a grant covered (an after step of the guardian: the
    verdict is decided; a dry run records nothing)."""
    g, proposal = turn.guardian, turn.proposal.proposal
    if g is None or g.reason_code != auto_approve.AUTO_APPROVED or proposal is None:
        return
    _record(turn, rt, proposal.root, str(g.details["grant_id"]))


def _record(turn: Turn, rt: Runtime, root: Any, grant_id: str) -> None:
    now = rt.clock()
    assert isinstance(root, ToolCallProposal)
    today = now.astimezone(rt.policy.zone).date()
    policy = Policy.build(rt.policy, rt.registry)
    job = jobs.create(
        rt.store,
        {
            "job_id": job_id(turn),
            "org_id": turn.org_id,
            "room_id": turn.room_id,
            "conversation_key": turn.conversation_key,
            "user_id": turn.user_id,
            "turn_id": turn.turn_id,
            "step": turn.step,
            "status": "auto_approved",
            "tools": [c.tool_name for c in root.tool_calls],
            "targets": [t for c in root.tool_calls for t in auto_approve.call_targets(c.parameters)],
            "job_type": auto_approve.job_type(turn.route.route),
            "summary": summary(root, rt.registry, today=today),
            "reversible": not any(policy.irreversible(c.tool_name) for c in root.tool_calls),
            "requested_at": now,
            "decided_at": now,
            "approver": f"auto:{grant_id}",
            "grant_id": grant_id,
            "expires_at": now + rt.settings.retention(turn.org_id),
        },
    )
    jobs.record_event(turn, job)


def chat_command(turn: Turn, rt: Runtime) -> None:
    """The OFF or ON chat command, when the message is one: written before anything else."""
    if turn.step > 0:
        return
    if auto_approve.is_off_command(turn.inbound.text):
        _off(turn, rt)
    elif auto_approve.is_on_command(turn.inbound.text):
        now = rt.clock()
        auto_approve.opt_in(rt.store, turn.org_id, now, user_id=turn.user_id)
        live = auto_approve.live_grants(rt.store, turn.org_id, now, user_id=turn.user_id)
        turn.context.auto_off = {"scope": "on", "live": len(live)}


def _off(turn: Turn, rt: Runtime) -> None:
    person = get_person(rt.store, turn.org_id, turn.user_id)
    whole_org = person is not None and person.level >= ORG_OFF_LEVEL
    now = rt.clock()
    others = [
        g
        for g in auto_approve.live_grants(rt.store, turn.org_id, now)
        if not whole_org and g.get("user_id") != turn.user_id
    ]
    # the person's own requests first: whatever else happens, theirs are asked about from now on
    auto_approve.opt_out(rt.store, turn.org_id, now, user_id=turn.user_id)
    auto_approve.turn_off(
        rt.store,
        turn.org_id,
        now,
        by=turn.user_id,
        policy=rt.policy.approval,
        user_id=None if whole_org else turn.user_id,
    )
    turn.context.auto_off = {"scope": "org" if whole_org else "own", "others_left": len(others)}


def _authorized(turn: Turn, rt: Runtime, proposal: Proposal) -> bool:
    """The Authorization Gate the authorizer layer will apply: a grant never allows what the asker
    may not do (a job's turn that delegates again was blocked before: the guardian's step)."""
    return gate(turn, rt, proposal).result == "allowed"


def answer_command(turn: Turn, rt: Runtime) -> Outcome | None:
    """The catalogue answer to the OFF or ON command (``None`` when the message was neither)."""
    said = turn.context.auto_off
    if not said:
        return None
    scope = said.get("scope")
    if scope == "on":
        text = rt.persona.message("auto_on_own")
        if not said.get("live"):
            text += "\n" + rt.persona.message("auto_on_no_grant")
        why = "自動承認を自分の依頼に戻す指示なので、戻したことを伝える（LLMは呼ばない）"
    else:
        text = rt.persona.message("auto_off_org" if scope == "org" else "auto_off_own")
        if said.get("others_left"):
            text += "\n" + rt.persona.message("auto_off_org_needs_admin", level=ORG_OFF_LEVEL)
        why = "自動承認を止める指示なので、止めたことを伝える（LLMは呼ばない）"
    turn.proposal.arm = "fast_path"
    turn.proposal.proposal = fixed_text(text, why)
    return Outcome("auto_on" if scope == "on" else "auto_off", reason_code=f"approval.auto_off.{scope}")
