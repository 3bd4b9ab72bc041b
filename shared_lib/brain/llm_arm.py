"""The LLM arm of the brain layer, step by step:

1. fast path: a trivial greeting is answered from the catalogue, no LLM call (``fast_path``);
2. model choice (flags ``model`` / ``fast_model``, the route's profile), recorded on the turn;
3. prompt assembly and masking (the route's instructions and only its tools); the user's
   vault is stored encrypted for the executor;
4. the proposal (``llm_brain.propose``): retries, validation, constitution, confidence;
   an ``LLMError`` becomes the catalogue's persona message (``api_timeout``, ...);
5. violations recorded on ``turn.proposal.violations``, one admin alert each;
6. degraded mode (§6.7.7): with the store unavailable a tool call cannot run (the
   executor needs it for receipts), so it is answered with the degraded message;
7. a text answer's wording among N (Best-of-N, when the flags serve the organisation), before
   the guardian judges it;
8. self-critique when sampled, recorded only.
"""

from __future__ import annotations

import json
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

from shared_lib.brain import fast_path, llm_brain, route_profile, self_critique
from shared_lib.brain.accounting import add_call_usage
from shared_lib.brain.config import BrainConfig, load_brain_config
from shared_lib.brain.constitution import blocked, inspect_proposal
from shared_lib.brain.execution_claims import Said
from shared_lib.brain.integration import error_text
from shared_lib.brain.llm_brain import BrainResult, fixed_text
from shared_lib.brain.models import flags_document, model_for, proposal_model
from shared_lib.brain.prompt import assemble
from shared_lib.brain.steps_prompt import history_messages
from shared_lib.brain.vault import store_vault
from shared_lib.errors import BrainError, LLMError
from shared_lib.observability.logs import log_event
from shared_lib.privacy.sanitizer import PLACEHOLDER
from shared_lib.turn.callctx import remaining
from shared_lib.turn.decisions import Outcome
from shared_lib.turn.envelope import ConstitutionViolation, Turn, Usage
from shared_lib.turn.proposal import Proposal, TextResponseProposal

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime


def run(turn: Turn, rt: Runtime) -> Outcome:
    cfg = load_brain_config()
    sec = turn.proposal
    doc = flags_document(rt)
    key = (
        fast_path.match(turn.brain_text(), cfg) if turn.step == 0 and (doc is None or doc.fast_path) else None
    )
    if key:
        sec.arm = "fast_path"
        sec.proposal = fixed_text(
            rt.persona.message(key), "定型の挨拶なので、LLMを呼ばずに定型文で応答する（高速パス）"
        )
        return Outcome("fast_path", reason_code="fast_path", detail=key)
    assert rt.llm is not None
    sec.arm = "llm"
    if (left := remaining()) is not None and left <= 0 and turn.step == 0:
        return _not_started(turn, rt)
    sec.model, why = proposal_model(turn, rt, cfg)
    route = route_profile.profile(turn)  # its tools only, its instructions (config/routing.json)
    registry = route_profile.offered(rt.registry, route)
    prompt = assemble(
        turn,
        persona=rt.persona,
        registry=registry,
        now=rt.clock(),
        route_prompt=route_profile.instructions(turn),
    )
    if turn.loop.steps:  # a later step: the model sees what its earlier proposals led to
        today = rt.clock().astimezone(rt.policy.zone).date()
        history = history_messages(
            turn.loop.steps, registry=rt.registry, today=today, vault=dict(prompt.vault)
        )
        # a loop resumed by 「はい」 goes on with the request it paused on (stored masked)
        prompt = replace(prompt, history=history, user_text=turn.loop.request or prompt.user_text)
    vault = _store_vault(turn, rt, prompt.vault, cfg)
    before = turn.usage.model_copy()
    try:
        result = llm_brain.propose(
            rt.llm,
            prompt,
            persona=rt.persona,
            registry=registry,
            cfg=cfg,
            model=sec.model,
            max_tokens=rt.settings.max_tokens,
            record=partial(add_call_usage, turn, rt.prices),
            policy=rt.policy,
            said=_said(turn, prompt.user_text, prompt.history),
        )
    except LLMError as exc:
        turn.add_error(
            BrainError.of(exc.code, exc.detail or exc.code, layer="brain", retry_after=exc.retry_after)
        )
        sec.proposal = fixed_text(
            error_text(rt.persona, exc.code), f"LLM呼び出しに失敗したため定型文で応答する（{exc.code}）", 0.0
        )
        return Outcome("llm_error", reason_code=exc.code, detail=f"model={sec.model}")
    _record(turn, rt, result)
    sec.usage = _delta(turn.usage, before)
    degraded = _degrade(turn, rt, cfg, vault, set(prompt.vault))
    if not degraded and not result.parse_failed and turn.spends_extras and not blocked(result.violations):
        if not result.violations:
            _text_best_of_n(
                turn, rt, cfg, result, _said(turn, prompt.user_text, prompt.history), prompt.user_text
            )
        _critique(turn, rt, cfg, doc.self_critique_rate if doc else 0.0)
    band = result.band.name if result.band else "-"
    detail = (
        f"{sec.proposal.output_type if sec.proposal else '-'} model={sec.model}({why}) band={band} "
        f"attempts={result.attempts}"
        + (f" dropped={','.join(result.dropped)}" if result.dropped else "")
        + (f" trimmed={','.join(result.trimmed)}" if result.trimmed else "")
    )
    if blocked(result.violations):
        code = next(v.code for v in result.violations if v.action == "block")
        return Outcome("constitution_violation", reason_code=code, detail=detail)
    if degraded:
        return Outcome("degraded", reason_code="degraded.store", detail=detail)
    if result.parse_failed:
        return Outcome("parse_error", reason_code="parse_error", detail=detail)
    return Outcome("proposed", reason_code=result.proposal.output_type, detail=detail)


def _not_started(turn: Turn, rt: Runtime) -> Outcome:
    """The turn's budget was spent before the brain started (its absolute deadline passed while it
    waited, or the stages before it took all of it): nothing the brain did, so not an LLM error
    (the rollback guard leaves it out, the operators get an alert), and the user reads that it was
    not done and may send it again, never a bare 「もう一度言って」."""
    turn.add_error(BrainError.of("turn_backlog", "the turn's budget was spent before the brain started"))
    turn.proposal.proposal = fixed_text(
        rt.persona.message("turn_backlog"),
        "処理を始める前に時間切れになったため、未実行であることを伝える",
        0.0,
    )
    return Outcome("not_started", reason_code="turn_backlog")


def _delta(after: Usage, before: Usage) -> Usage:
    """This step's brain calls: what they added to the turn's usage."""
    return after.since(before)


def _store_vault(turn: Turn, rt: Runtime, entries: dict[str, str], cfg: BrainConfig) -> str:
    """``ok``, ``no_key`` (values stay masked) or ``store_down``."""
    try:
        stored = store_vault(
            rt.store,
            turn,
            entries,
            now=rt.clock(),
            ttl_minutes=cfg.vault.ttl_minutes,
            cipher=rt.cipher(turn.org_id),
        )
    except Exception as exc:  # the store is down: tool calls will be answered in degraded mode
        turn.add_error(
            BrainError.of(
                "memory_access_error", f"vault: {type(exc).__name__}", layer="brain", source="store"
            )
        )
        return "store_down"
    return "ok" if stored else "no_key"


def _record(turn: Turn, rt: Runtime, result: BrainResult) -> None:
    sec = turn.proposal
    sec.proposal, sec.attempts = result.proposal, result.attempts
    sec.dropped_parameters = list(result.dropped)
    sec.violations.extend(result.violations)
    for error in result.errors:
        turn.add_error(error)
    for v in result.violations:
        _alert(turn, rt, v)


def _alert(turn: Turn, rt: Runtime, v: ConstitutionViolation) -> None:
    message = (
        f"{turn.alert_label()}LLM Brain 憲法違反 第{v.article}条 {v.code}（対応: {v.action}）: {v.detail}"
    )
    try:
        rt.emit_alert(turn, "constitution_violation", message)
    except Exception as exc:  # the violation is on the turn; the observer alerts again from the record
        log_event("alert_not_published", turn=turn, layer="brain", severity="ERROR", error=type(exc).__name__)


def _degrade(turn: Turn, rt: Runtime, cfg: BrainConfig, vault: str, placeholders: set[str]) -> bool:
    """Seed §6.7.7: a tool call that cannot run safely becomes the degraded answer: the store
    is unavailable (the executor needs it for receipts), or the user's masked values could
    not be kept for the executor."""
    sec = turn.proposal
    if sec.proposal is None or not sec.proposal.tool_calls:
        return False
    missing = sorted(set(turn.context.degraded) & set(cfg.degraded.store_sources))
    if vault == "store_down":
        missing.append("store")
    masked = vault == "no_key" and any(_uses(c.parameters, placeholders) for c in sec.proposal.tool_calls)
    if not missing and not masked:
        return False
    reason = (
        f"store unavailable ({', '.join(missing)})"
        if missing
        else "masked values cannot be restored (no vault key)"
    )
    sec.proposal = fixed_text(
        rt.persona.message("degraded_store"), f"縮退モード: {reason} のため、ツールを使う提案を実行できない"
    )
    turn.add_error(BrainError.of("db_connection_error", reason, layer="brain"))
    try:
        rt.emit_alert(turn, "db_connection_error", f"degraded answer: {reason}")
    except Exception as exc:
        log_event("alert_not_published", turn=turn, layer="brain", severity="ERROR", error=type(exc).__name__)
    return True


def _uses(parameters: object, placeholders: set[str]) -> bool:
    return any(m.group(0) in placeholders for m in PLACEHOLDER.finditer(str(parameters)))


def _text_best_of_n(
    turn: Turn, rt: Runtime, cfg: BrainConfig, result: BrainResult, said: Said, user: str
) -> None:
    """A text answer the model gave in its own words (not a band's fixed message) may be chosen
    among other wordings (Best-of-N, seed 001 §5.3), before the guardian judges it. A wording
    that reads as a claimed execution (the constitution's check, §4.4.1) is never taken: the
    proposal's own answer stays."""
    hook, proposal = rt.hooks.phrasing, turn.proposal.proposal
    root = proposal.root if proposal is not None else None
    if hook is None or not isinstance(root, TextResponseProposal):
        return
    if result.band is not None and result.band.action not in ("execute", "execute_logged"):
        return
    flags = hook.settings_for(turn, rt)
    if flags is None:
        return
    draft = root.text_response
    try:
        text = hook.phrase_text(turn, rt, user_text=user, draft=draft, flags=flags)
    except LLMError as exc:  # the draft stands
        log_event("best_of_n_failed", turn=turn, layer="brain", severity="WARNING", error=exc.code)
        return
    if not text or text == draft:
        return
    chosen = Proposal(root=root.model_copy(update={"text_response": text}))
    _, found = inspect_proposal(chosen, cfg, rt.persona, rt.policy, said, registry=rt.registry)
    if found:
        log_event("best_of_n_kept_draft", turn=turn, layer="brain", codes=[v.code for v in found])
        return
    turn.proposal.proposal = chosen


def _critique(turn: Turn, rt: Runtime, cfg: BrainConfig, rate: float) -> None:
    assert rt.llm is not None and turn.proposal.proposal is not None
    proposal = turn.proposal.proposal
    found = self_critique.conditions(proposal, rt.registry, cfg, turn.turn_id)
    if not self_critique.should_run(found, rate, turn.turn_id):
        return
    turn.proposal.self_critique = self_critique.critique(
        rt.llm,
        turn,
        proposal,
        persona=rt.persona,
        model=model_for(cfg.models.self_critique, turn, rt),
        cfg=cfg,
        found=found,
        record=partial(add_call_usage, turn, rt.prices),
    )


def _said(turn: Turn, user_text: str, history: list[dict[str, Any]]) -> Said:
    """What a text answer's past tense may refer to: the user's words, the conversation's earlier
    replies and this turn's earlier steps (``execution_claims``)."""
    replies = [str(m.get("text") or "") for m in turn.context.recent_messages if m.get("role") != "user"]
    return Said(
        user_text=user_text, earlier=(*replies, *(json.dumps(h, ensure_ascii=False) for h in history))
    )
