"""Responder layer: composes the reply, updates session state, sends exactly once.

Fixed templates (persona catalogue) answer confirm / block / deny / errors; tool results
are phrased by a second LLM call in the persona (response integration) when the LLM arm
served the turn, else by a fixed template. The send receipt makes a redelivered
responder never send twice; the channel gets the same idempotency key on a retry.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from shared_lib.envelope import Turn, Usage
from shared_lib.errors import BrainError, LLMError
from shared_lib.ids import new_short_id
from shared_lib.layers.base import Layer, Outcome
from shared_lib.layers.context import append_history
from shared_lib.ports import LLMRequest, OutboundReply, Transaction
from shared_lib.proposal import ClarificationProposal, TextResponseProposal, ToolCallProposal
from shared_lib.sanitizer import Sanitizer
from shared_lib.state import session

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime


def _compose(turn: Turn, rt: Runtime) -> tuple[str, str]:
    """(kind, text) of the reply; never text from an exception."""
    persona, p = rt.persona, turn.proposal.proposal
    if p is None:
        return "error", persona.message("parse_error")
    g, a = turn.guardian, turn.authorization
    if g is not None and g.blocked:
        if g.reason_code.startswith("confidence"):
            return "block", persona.message("too_low_confidence")
        return "block", persona.message("block", reason=g.message)
    if a is not None and a.result == "denied":
        key = "access_control_error" if a.reason_code == "directory.unavailable" else "deny"
        return "deny", persona.message(key)
    root = p.root
    if isinstance(root, TextResponseProposal):
        return "reply", root.text_response
    if isinstance(root, ClarificationProposal):
        options = "\n".join(f"{i}. {o}" for i, o in enumerate(root.options, 1))
        return "clarify", persona.message("clarify", question=root.clarification_question) + (
            f"\n{options}" if options else "")
    if g is not None and g.action == "confirm":
        return "confirm", _ask_confirmation(turn, rt, root)
    return "reply", _integrate(turn, rt)


def _ask_confirmation(turn: Turn, rt: Runtime, root: ToolCallProposal) -> str:
    assert turn.guardian is not None
    approval_id = new_short_id("ap")
    call = root.tool_calls[0]
    question = root.confirmation_question or f"{turn.guardian.message}\n操作: {call.tool_name} {json.dumps(call.parameters, ensure_ascii=False)}"
    if not turn.shadow:
        session.set_pending(rt.store, turn.org_id, turn.conversation_key, {
            "approval_id": approval_id, "user_id": turn.user_id, "question": question,
            "proposal": turn.proposal.proposal.model_dump(mode="json") if turn.proposal.proposal else None,
            "params_hash": session.params_hash(call.tool_name, call.parameters),
            "reason_code": turn.guardian.reason_code, "turn_id": turn.turn_id}, rt.clock())
    key = "confirm_double" if turn.guardian.double_confirmation else "confirm"
    return rt.persona.message(key, question=question, approval_id=approval_id)


def _integrate(turn: Turn, rt: Runtime) -> str:
    results = turn.execution.results
    if not results:
        return rt.persona.message("execution_error")
    failed = [r for r in results if not r.ok]
    if failed:
        r = failed[0]
        if r.error_code == "validation_error":
            detail = str(r.result.get("detail", ""))
            options = r.result.get("options") or []
            return rt.persona.message("validation_error", detail=detail + (f"（{'／'.join(options)}）" if options else ""))
        return rt.persona.message(r.error_code or "execution_error")
    if turn.proposal.arm == "llm" and rt.llm is not None:
        try:
            return _llm_phrase(turn, rt)
        except LLMError as exc:
            turn.add_error(BrainError.of(exc.code, exc.detail, layer="responder"))
    return "\n".join(rt.persona.message("tool_done", tool=r.tool_name) for r in results)


def _llm_phrase(turn: Turn, rt: Runtime) -> str:
    assert rt.llm is not None
    masked = Sanitizer.default().mask_obj([{"tool": r.tool_name, "result": r.result} for r in turn.execution.results])
    user = Sanitizer.default().mask_text(turn.inbound.text)
    prompt = (f"ユーザーの依頼:「{user}」\n実行結果(JSON): {json.dumps(masked, ensure_ascii=False, default=str)}\n"
              "この結果を、あなたのキャラクターの口調で3〜5文でユーザーに伝えてください。事実だけを伝え、結果にないことは言わないでください。")
    req = LLMRequest(call_type="integration", model=turn.proposal.model or rt.settings.model, max_tokens=600,
                     system=[{"type": "text", "text": rt.persona.system_prompt(), "cache_control": {"type": "ephemeral"}}],
                     messages=[{"role": "user", "content": prompt}])
    resp = rt.llm.complete(req)
    turn.usage.add(Usage(input_tokens=resp.usage.input_tokens, output_tokens=resp.usage.output_tokens,
                         cache_creation_input_tokens=resp.usage.cache_creation_input_tokens,
                         cache_read_input_tokens=resp.usage.cache_read_input_tokens, llm_calls=1,
                         llm_duration_ms=resp.duration_ms, cost_usd=rt.prices.cost(req.model, resp.usage)))
    return resp.text().strip() or "\n".join(rt.persona.message("tool_done", tool=r.tool_name)
                                            for r in turn.execution.results)


def _send_once(turn: Turn, rt: Runtime, text: str) -> None:
    """Claim a send receipt, send, mark it sent; a redelivery after 'sent' never sends again."""
    path = f"orgs/{turn.org_id}/send_receipts/{turn.turn_id}-{turn.step}"
    key = f"{turn.turn_id}-{turn.step}"

    def _claim(txn: Transaction) -> dict[str, Any] | None:
        doc = txn.get(path)
        if doc is None:
            txn.set(path, {"status": "sending", "at": rt.clock(), "attempts": 1})
        elif doc.get("status") != "sent":
            txn.set(path, {**doc, "attempts": int(doc.get("attempts", 0)) + 1})
        return doc

    before = rt.store.run_transaction(_claim)
    res = turn.response
    if before is not None and before.get("status") == "sent":
        res.sent, res.duplicate_send, res.send_receipt = True, True, key
        return
    channel = rt.channels.get(turn.channel)
    if channel is None:
        turn.add_error(BrainError.of("send_error", f"no channel adapter for {turn.channel}", layer="responder"))
        return
    reply = OutboundReply(channel=turn.channel, org_id=turn.org_id, room_id=turn.room_id,
                          thread_id=turn.inbound.thread_id, user_id=turn.user_id,
                          reply_handle=turn.inbound.reply_handle, text=text, idempotency_key=key)
    result = channel.send(reply)
    if not result.ok:
        turn.add_error(BrainError.of("send_error", result.error or f"status {result.status}", layer="responder"))
        raise RuntimeError(f"send failed: {result.error or result.status}")  # redeliver, then dead-letter
    rt.store.set(path, {"status": "sent", "at": rt.clock(), "provider_message_id": result.provider_message_id})
    res.sent, res.send_receipt = True, key


def _update_session(turn: Turn, rt: Runtime) -> None:
    approval = turn.proposal.approval or {}
    now = rt.clock()
    if approval.get("approval_id") and not approval.get("reminder"):
        session.resolve_pending(rt.store, turn.org_id, turn.conversation_key, approval["approval_id"], now)
    if turn.response.kind != "confirm":
        p = turn.proposal.proposal
        session.touch(rt.store, turn.org_id, turn.conversation_key, now,
                      last_intent=p.output_type if p else None,
                      last_tool_called=p.tool_calls[0].tool_name if p and p.tool_calls else None)


def run(turn: Turn, rt: Runtime) -> Outcome:
    kind, text = _compose(turn, rt)
    res = turn.response
    res.kind, res.text = kind, text  # type: ignore[assignment]
    if turn.shadow:
        return Outcome("dry_run", reason_code=kind, next_topic=None)
    _update_session(turn, rt)
    _send_once(turn, rt, text)
    append_history(rt, turn, "assistant", text, "out")
    return Outcome("sent", reason_code=kind, detail=f"{len(text)} chars")


LAYER = Layer("responder", "completed", run)
