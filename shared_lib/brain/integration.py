"""Response integration (seed 000 §5.1 step ⑦, §17.5): what the user reads after execution.

``integrate(turn, rt)`` is the responder's entry point; a turn whose action ran under an
auto-approve grant says so in the persona's line (``auto_approved_note``). Successful results of an LLM-served
turn are phrased by a second LLM call in the persona (3-5 sentences, masked results,
the same cached prefix as the proposal call); failures, legacy turns and a failed
phrasing call use the persona's fixed templates (``done_<tool>``, the error catalogue).
A delivery (an announcement's ``delivery`` counts) is always told by the fixed templates
(``done_announcement_<status>``): how many people were reached is a fact, not a phrasing.
The results of every step of a multi-step turn are told together, in one reply, each once: a
step that found what an earlier step found (a loop stopped at its limit after searching three
times) adds nothing, and no line of the reply is said twice (``once``).
A handler's data never reaches the user unformatted: both ways read the result as a user
does (``tools.display.shown_result``: 「11月25日（水）」 for a date, 「好み」 for ``preference``),
the tool by its display name, a parameter a failure names by its label (「担当者」).
"""

from __future__ import annotations

import json
import re
from datetime import date
from functools import partial
from typing import TYPE_CHECKING, Any

from shared_lib.brain.accounting import add_call_usage
from shared_lib.brain.config import load_brain_config
from shared_lib.brain.continuation import complete
from shared_lib.brain.models import model_for
from shared_lib.brain.persona_prompt import persona_system
from shared_lib.brain.prompt import proposal_tools, stable_system
from shared_lib.errors import CATALOGUE, BrainError, LLMError
from shared_lib.persona.catalogue import Persona
from shared_lib.ports import LLMRequest
from shared_lib.privacy.sanitizer import Sanitizer, unmask
from shared_lib.tools.display import labels_text, shown_result
from shared_lib.tools.registry import ToolInputError, ToolRegistry
from shared_lib.turn.envelope import ToolResult, Turn

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime

MAX_REPLY_CHARS = 1200
_ITEM = re.compile(r"(?:[-・*•]|\d+[.)．）、])\s*")  # a list's item line: 「- 資料」「1. 資料」


def all_results(turn: Turn) -> list[ToolResult]:
    """Every step's results, in order (a single-step turn: this step's). A finished step's failed
    call was recovered (the loop went on after it, ``loop.controller``): the reply tells what the
    recovery did, not the refusal it recovered from."""
    finished = [r for step in turn.loop.steps for r in step.results if r.ok]
    return finished + list(turn.execution.results)


def integrate(turn: Turn, rt: Runtime) -> str:
    text = once(_integrate(turn, rt))
    if _auto_approved(turn) and rt.persona.has("auto_approved_note"):
        text = f"{text}\n{rt.persona.message('auto_approved_note')}"
    return text


def once(text: str) -> str:
    """``text`` with every sentence line said once: a later line equal to an earlier one
    (spaces aside) is dropped; blank lines and list items stay (two lists may share an item)."""
    seen: set[str] = set()
    kept = []
    for line in text.split("\n"):
        key = " ".join(line.split())
        if key and key in seen and not _ITEM.match(key):
            continue
        seen.add(key)
        kept.append(line)
    return "\n".join(kept)


def _distinct(shown: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each finding once, in order: a step that found what an earlier one found is not shown
    again (the model would tell it again)."""
    keys = [json.dumps(x, ensure_ascii=False, sort_keys=True, default=str) for x in shown]
    return [x for i, x in enumerate(shown) if keys[i] not in keys[:i]]


def _auto_approved(turn: Turn) -> bool:
    """Whether an action of this turn ran under an auto-approve grant (seed 002 §6.4)."""
    return (turn.guardian is not None and turn.guardian.reason_code == "approval.auto_approved") or any(
        e.get("event") == "approval.auto_approved" for e in turn.loop.events
    )


def _integrate(turn: Turn, rt: Runtime) -> str:
    results = all_results(turn)
    if not results:
        return error_text(rt.persona, "execution_error")
    failed = [r for r in results if not r.ok]
    if failed:
        return failure_text(rt.persona, failed[0], rt.registry)
    delivered = any("delivery" in r.result for r in results)
    if _llm_serves(turn) and rt.llm is not None and not delivered:
        try:
            text = _llm_phrase(turn, rt)
        except LLMError as exc:
            turn.add_error(BrainError.of(exc.code, f"integration: {exc.detail}", layer="responder"))
            text = ""
        if text:
            return text
    today = rt.clock().astimezone(rt.policy.zone).date()
    lines = (done_text(rt.persona, r, rt.registry, today=today) for r in results)
    return "\n".join(dict.fromkeys(lines))  # the same finding of two steps is told once


def error_text(persona: Persona, code: str, **values: object) -> str:
    """The persona's message for a catalogue code; silent or unknown codes fall back by category."""
    entry = CATALOGUE.get(code)
    if persona.has(code) and not (entry and entry.silent):
        return persona.message(code, **values)
    fallback = "llm_unavailable" if entry is not None and entry.category == "llm_error" else "execution_error"
    return persona.message(fallback)


def failure_text(persona: Persona, result: ToolResult, registry: ToolRegistry | None = None) -> str:
    reg = registry or ToolRegistry()
    if result.error_code == "validation_error":
        said = _handler_says(persona, result, reg)
        return said or persona.message("validation_error", detail=_invalid_detail(result, reg))
    return error_text(persona, result.error_code or "execution_error")


def refusal_text(persona: Persona, registry: ToolRegistry, tool_name: str, exc: ToolInputError) -> str:
    """What the user reads when a call's parameters fail their check before any question is
    asked (``ToolSpec.precheck``): the same sentence as the handler's refusal after 「はい」."""
    result = ToolResult(
        tool_name=tool_name, call_index=0, ok=False, result=exc.as_result(), error_code="validation_error"
    )
    return failure_text(persona, result, registry)


def _handler_says(persona: Persona, result: ToolResult, registry: ToolRegistry) -> str:
    """The persona's sentence for a handler's refusal (``tool_error.<key>``), the field by its label."""
    data = result.result
    key = f"tool_error.{data.get('error_key')}"
    if not data.get("error_key") or not persona.has(key):
        return ""
    field = str(data.get("field") or "")
    values = {k: v for k, v in (data.get("values") or {}).items() if k != "field"}
    return persona.message(
        key, field=registry.parameter_label(result.tool_name, field) if field else "", **values
    )


def _invalid_detail(result: ToolResult, registry: ToolRegistry) -> str:
    """What to fix, naming parameters by their labels: the model's failed fields (「担当者、期限」),
    or the handler's sentence with the field it names (``title が空です``) labelled."""
    data, tool = result.result, result.tool_name
    named = [str(f).split(":", 1)[0].split(".", 1)[0] for f in data.get("fields") or []]
    if named:
        return f"{labels_text(registry, tool, named)}が足りないか、読み取れなかった"
    detail = str(data.get("detail", ""))
    field = data.get("field")
    if field and str(field) in detail:
        detail = detail.replace(str(field), registry.parameter_label(tool, str(field)))
    options = data.get("options") or []
    return detail + (f"（{'／'.join(map(str, options))}）" if options else "")


def done_text(
    persona: Persona, result: ToolResult, registry: ToolRegistry | None = None, *, today: date | None = None
) -> str:
    """Fixed template ``done_<tool>`` filled from the result as a user reads it (lists become
    bullet lines); a tool without one is named by its display name."""
    reg = registry or ToolRegistry()
    delivery = result.result.get("delivery")
    if isinstance(delivery, dict):
        status = {"delivered": "delivered", "partially_delivered": "partial"}.get(
            str(delivery.get("status")), "undelivered"
        )
        return persona.message(f"done_announcement_{status}", **delivery)
    key = f"done_{result.tool_name}"
    if result.result.get("count") == 0 and persona.has(f"{key}_none"):
        key = f"{key}_none"  # 「見つからなかったウル」, never 「0件あるウル」
    if not persona.has(key):
        return persona.message("tool_done", tool=reg.display_name(result.tool_name))
    shown: dict[str, Any] = shown_result(reg, result.tool_name, dict(result.result), today=today)
    values = dict(shown)
    # the items are what the tool found: its result's first list (a later one, such as the tags
    # to search next, is for the model, never the template's bullet lines)
    if (found := next((v for v in shown.values() if isinstance(v, list)), None)) is not None:
        values["items"] = "".join(f"\n- {_line(v)}" for v in found[:20])
    return persona.message(key, **values)


def _line(value: Any) -> str:
    if isinstance(value, dict):
        return " / ".join(str(v) for k, v in value.items() if v is not None and not str(k).endswith("id"))
    return str(value)


def _llm_serves(turn: Turn) -> bool:
    arm = turn.brain_arm
    return (
        not turn.flags.kill_switch
        and arm == "llm"  # a local-only turn's proposal came from a local peer: it phrases too
        and turn.proposal.arm not in ("legacy", "kill_switch", "fast_path")
    )


def _llm_phrase(turn: Turn, rt: Runtime) -> str:
    assert rt.llm is not None
    s = Sanitizer.default()
    vault: dict[str, str] = {}
    user = s.mask(turn.brain_text(), vault)[0]
    today = rt.clock().astimezone(rt.policy.zone).date()
    shown = [
        {
            "tool": rt.registry.display_name(r.tool_name),
            "result": shown_result(rt.registry, r.tool_name, r.result, today=today),
        }
        for r in all_results(turn)
    ]
    results = s.mask_obj(_distinct(shown), vault)
    prompt = rt.persona.prompt(
        "integration", user_message=user, results=json.dumps(results, ensure_ascii=False, default=str)
    )
    request = phrasing_request(turn, rt, prompt)
    single = partial(_single_phrase, turn, rt)
    best_of_n = rt.hooks.phrasing  # Best-of-N, lent by its room (``features.best_of_n``) when registered
    flags = best_of_n.settings_for(turn, rt) if turn.spends_extras and best_of_n is not None else None
    if flags is None:
        return _opened(single(request), vault, turn)
    question = f"{user}\n{json.dumps(results, ensure_ascii=False, default=str)}"
    assert best_of_n is not None
    text = best_of_n.phrase(
        turn, rt, request, question=question, results=all_results(turn), flags=flags, single=single
    )
    return _opened(_clip(text), vault, turn)


def phrasing_request(turn: Turn, rt: Runtime, content: str, *, max_tokens: int | None = None) -> LLMRequest:
    """A phrasing call in the persona (``content`` the user message of it): Base and the
    persona's block as the system and, on the proposal's model, the proposal call's tools, so
    the prefix the proposal call cached is read again."""
    cfg = load_brain_config()
    same = cfg.models.integration == "same" and bool(turn.proposal.model)
    return LLMRequest(
        call_type="integration",
        model=model_for(cfg.models.integration, turn, rt),
        max_tokens=max_tokens or cfg.max_tokens.integration,
        system=[stable_system(rt.persona), *persona_system(turn, rt.persona, rt.registry)],
        # the proposal call's tools and Base keep the cached prefix identical (tools, then Base)
        tools=proposal_tools(rt.registry) if same else [],
        tool_choice={"type": "none"} if same else None,
        messages=[{"role": "user", "content": content}],
        stream=cfg.stream,
    )


def _opened(text: str, vault: dict[str, str], turn: Turn) -> str:
    """The phrased reply with the placeholders of values a handler unsealed for the asker (a
    memory or a task they may read: ``ToolResult.revealed``) back in clear; the model saw only
    the placeholders. Every other placeholder is left to ``Sanitizer.present``."""
    revealed = {v for r in all_results(turn) for v in r.revealed}
    return unmask(text, {ph: value for ph, value in vault.items() if value in revealed}) if revealed else text


def _single_phrase(turn: Turn, rt: Runtime, request: LLMRequest) -> str:
    """The one phrasing call (Best-of-N off, or N = 1)."""
    assert rt.llm is not None
    cfg = load_brain_config()
    done = complete(
        rt.llm,
        request,
        max_continuations=cfg.max_continuations,
        cap=cfg.max_tokens.cap,
        record=partial(add_call_usage, turn, rt.prices),
    )
    return _clip(done.response.text().strip())


def _clip(text: str) -> str:
    return text if len(text) <= MAX_REPLY_CHARS else text[: MAX_REPLY_CHARS - 1] + "…"
