"""The constitution enforcer (seed 000 §4.7): the LLM proposes, it never decides.

It inspects every LLM answer and records each violation with its article on
``turn.proposal.violations``; the brain layer raises an admin alert for each. Actions
follow §4.7.1 exactly:

| article | violation | detected in | action |
|---|---|---|---|
| 4.3.8 | reasoning missing or too short | reasoning fields | ``retry`` once with guidance, then ``block`` |
| 4.4.2 | the LLM tries to decide permission | the policy's permission patterns (``policy.claims``), decision keys | a claim in the words: ``retry`` once naming it, then ``block``; a decision key: ``block`` |
| 4.4.1 | the LLM asserts execution ("実行します", "作成しました") | reasoning/texts, decision keys | ``suggest``: treated as a proposal again; user-visible assertions replaced |
| 4.4.3 | the LLM tries to set stored values | decision keys among the parameters (``id``, ``status``, …) | ``suggest``: values ignored, the handler's fixed logic decides |
| 4.4.4 | the LLM tries to decide what is logged | decision keys | ``suggest``: ignored, logging is automatic |

Any other parameter the tool does not declare (seed 000 §4.4.3's own ``priority`` example) is
no violation and no reason to retry: the LLM only extracted it, and the handler decides what
is stored. It is dropped before validation and its name recorded (``dropped``, kept on
``turn.proposal.dropped_parameters``, the brain's trail entry and the observability record).

Contract with the guardian: a violation whose ``action`` is ``block`` must BLOCK the
turn (reason code = the violation's ``code``); ``suggest`` and ``retry`` have been dealt
with here and are recorded for the audit only. Quoted user words (「…」) are not the
LLM's own judgement and are not scanned.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Literal

from shared_lib.brain import execution_claims
from shared_lib.brain.config import BrainConfig, Constitution
from shared_lib.brain.execution_claims import Said
from shared_lib.persona.catalogue import Persona
from shared_lib.policy.config import PolicyConfig, load_policy_config
from shared_lib.policy.rules import permission_claim
from shared_lib.policy.subject import Subject
from shared_lib.privacy.sanitizer import Sanitizer
from shared_lib.tools.registry import ToolRegistry
from shared_lib.turn.envelope import ConstitutionViolation
from shared_lib.turn.proposal import Proposal, TextResponseProposal, ToolCallProposal

Action = Literal["block", "suggest", "retry"]
ARTICLES: dict[str, tuple[str, Action]] = {
    "4.3.8": ("constitution.missing_reasoning", "retry"),
    "4.4.1": ("constitution.execution_assertion", "suggest"),
    "4.4.2": ("constitution.permission_decision", "block"),
    "4.4.3": ("constitution.db_decision", "suggest"),
    "4.4.4": ("constitution.log_decision", "suggest"),
}
PROPOSAL_KEYS = frozenset(
    {
        "output_type",
        "reasoning",
        "confidence",
        "tool_calls",
        "needs_confirmation",
        "confirmation_question",
        "text_response",
        "clarification_question",
        "options",
    }
)
CALL_KEYS = frozenset({"tool_name", "parameters", "parameter_sources"})
REASONING_KEYS = frozenset(
    {
        "intent_understanding",
        "context_used",
        "tool_selection_reason",
        "alternatives_considered",
        "response_strategy",
        "no_tool_reason",
        "ambiguity_detected",
        "possible_interpretations",
    }
)
_QUOTED = re.compile(r"「[^」]*」|『[^』]*』|\"[^\"]*\"|“[^”]*”")


def violation(article: str, detail: str, action: Action | None = None) -> ConstitutionViolation:
    code, default = ARTICLES[article]
    return ConstitutionViolation(
        article=article,
        code=code,
        detail=Sanitizer.default().mask_text(detail)[:300],
        action=action or default,
    )


# -- on the raw answer (before validation drops unknown keys) --------------------------------
def _article_of(key: str, rules: Constitution) -> str | None:
    lowered = key.lower()
    return next((art for art, keys in rules.decision_keys.items() if lowered in keys), None)


def inspect_raw(
    raw: Any, registry: ToolRegistry, rules: Constitution, dropped: list[str] | None = None
) -> tuple[Any, list[ConstitutionViolation]]:
    """Remove keys by which the LLM tries to decide (4.4.1-4.4.4) and record each.

    Parameters a tool does not declare are removed too; their names (``tool.parameter``)
    are appended to ``dropped``.
    """
    if not isinstance(raw, dict):
        return raw, []
    found: list[ConstitutionViolation] = []
    cleaned = dict(raw)
    for key in [k for k in raw if k not in PROPOSAL_KEYS]:
        article = _article_of(str(key), rules)
        if article:
            found.append(violation(article, f"top-level key {key!r}={str(raw[key])[:80]}"))
            cleaned.pop(key)
    reasoning = raw.get("reasoning")
    if isinstance(reasoning, dict):
        cleaned["reasoning"] = {
            k: v
            for k, v in reasoning.items()
            if k in REASONING_KEYS or not _flag(f"reasoning.{k}", k, v, rules, found)
        }
    calls = raw.get("tool_calls")
    if isinstance(calls, list):
        cleaned["tool_calls"] = [
            _clean_call(c, i, registry, rules, found, dropped if dropped is not None else [])
            for i, c in enumerate(calls)
        ]
    return cleaned, found


def _clean_call(
    call: Any,
    index: int,
    registry: ToolRegistry,
    rules: Constitution,
    found: list[ConstitutionViolation],
    dropped: list[str],
) -> Any:
    if not isinstance(call, dict):
        return call
    out = {
        k: v
        for k, v in call.items()
        if k in CALL_KEYS or not _flag(f"tool_calls[{index}].{k}", k, v, rules, found)
    }
    spec = registry.get(str(call.get("tool_name", "")))
    params = call.get("parameters")
    if spec is None or not isinstance(params, dict):
        return out
    declared = set(spec.params.model_fields) | {f.alias for f in spec.params.model_fields.values() if f.alias}
    out["parameters"] = {k: v for k, v in params.items() if k in declared}
    for key in [k for k in params if k not in declared]:
        if not _flag(f"{spec.name}.parameters.{key}", key, params[key], rules, found):
            dropped.append(f"{spec.name}.{key}")
    return out


def _flag(where: str, key: str, value: Any, rules: Constitution, found: list[ConstitutionViolation]) -> bool:
    article = _article_of(key, rules)
    if article:
        found.append(violation(article, f"{where}={str(value)[:80]} (ignored; fixed logic decides)"))
    return article is not None


# -- on the validated proposal ------------------------------------------------------------
def reasoning_problem(proposal: Proposal, min_chars: int) -> str | None:
    """Why the reasoning does not satisfy article 4.3.8, or ``None``."""
    root = proposal.root
    if isinstance(root, ToolCallProposal):
        required = {
            "intent_understanding": root.reasoning.intent_understanding,
            "tool_selection_reason": root.reasoning.tool_selection_reason,
        }
    elif isinstance(root, TextResponseProposal):
        required = {
            "intent_understanding": root.reasoning.intent_understanding,
            "no_tool_reason": root.reasoning.no_tool_reason,
        }
    else:
        required = {"ambiguity_detected": root.reasoning.ambiguity_detected}
    empty = [k for k, v in required.items() if not v.strip()]
    if empty:
        return f"reasoning.{', reasoning.'.join(empty)} must explain the judgement (article 4.3.8)"
    length = len(root.reasoning_text().strip())
    if length < min_chars:
        return f"reasoning is {length} characters; explain intent and reasons in at least {min_chars} (article 4.3.8)"
    return None


@lru_cache(maxsize=8)
def _compiled(patterns: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p) for p in patterns)


def _hits(patterns: list[str], texts: list[str]) -> list[str]:
    hits = []
    for rx in _compiled(tuple(patterns)):
        for text in texts:
            m = rx.search(text)
            if m:
                hits.append(m.group(0))
    return hits


def _unquoted(*texts: str) -> list[str]:
    return [_QUOTED.sub("「」", t) for t in texts if t]


def _reasoning_texts(proposal: Proposal) -> list[str]:
    out: list[str] = []
    for value in proposal.root.reasoning.model_dump().values():
        out += value if isinstance(value, list) else [value]
    return [str(v) for v in out]


def inspect_proposal(
    proposal: Proposal,
    cfg: BrainConfig,
    persona: Persona,
    policy: PolicyConfig | None = None,
    said: Said | None = None,
    *,
    registry: ToolRegistry,
) -> tuple[Proposal, list[ConstitutionViolation]]:
    """Permission decisions (4.4.2, block) and execution assertions (4.4.1, back to a suggestion).

    A permission decision is what the guardian's tree calls one (``policy.rules.permission_claim``
    over the policy's patterns), so the brain never withdraws what the guardian would let pass.
    """
    rules, root = cfg.constitution, proposal.root
    reasoning = _unquoted(*_reasoning_texts(proposal))
    visible = _unquoted(
        *(
            getattr(root, name, "")
            for name in ("confirmation_question", "text_response", "clarification_question")
        )
    )
    claim = permission_claim(Subject.of(proposal), (policy or load_policy_config()).constitution)
    found = [violation("4.4.2", f"「{claim[1]}」 ({claim[0].name})")] if claim else []
    asserted = sorted(set(_hits(rules.execution_patterns, reasoning + visible)))
    found += [violation("4.4.1", f"「{hit}」 treated as a proposal") for hit in asserted]
    if isinstance(root, ToolCallProposal) and _hits(
        rules.execution_patterns, _unquoted(root.confirmation_question)
    ):
        question = confirmation_question(root, persona, registry)
        proposal = Proposal(root=root.model_copy(update={"confirmation_question": question}))
    if isinstance(root, TextResponseProposal):
        # a thank-you, a condition, a past turn's action is no claim (execution_claims)
        claims = sorted(
            set(
                execution_claims.claims(
                    rules.completion_claim_patterns + rules.execution_patterns,
                    "\n".join(_unquoted(root.text_response)),
                    said or Said(),
                )
            )
        )
        if claims:
            found += [
                violation("4.4.1", f"「{hit}」 claimed without any execution")
                for hit in claims
                if hit not in asserted
            ]
            proposal = Proposal(
                root=root.model_copy(update={"text_response": persona.message("execution_not_done")})
            )
    return proposal, found


def permission_guidance(claims: list[ConstitutionViolation]) -> str:
    """What the retry after a permission claim tells the model: which words to remove or rephrase."""
    named = "; ".join(v.detail for v in claims)
    return (
        f"article 4.4.2: your answer decides a permission: {named}. You never decide who may do "
        "what; the charter's authorization gate does. Remove or rephrase exactly that claim: say what "
        "the user asked, what a document or the user states (「…とのこと」), or that the system checks "
        "the permission. Keep everything else of the proposal as it was."
    )


def confirmation_question(root: ToolCallProposal, persona: Persona, registry: ToolRegistry) -> str:
    """A neutral question built by fixed logic from the proposal (never an assertion), in the
    words a user reads: the tool's display name, each parameter's label, dates as 「11月25日（水）」.
    ``registry`` is the turn's (the runtime's: the built-ins, the features' tools, the skills)."""
    reg = registry
    call = root.tool_calls[0]
    summary = "\n".join(
        f"- {reg.parameter_label(call.tool_name, k)}: {_shown(v)}" for k, v in call.parameters.items()
    )
    return persona.message(
        "confirm_generated", tool=reg.display_name(call.tool_name), summary=summary or "- （指定なし）"
    )


def _shown(value: Any) -> str:
    """A parameter's value as a person reads it: a list joined, an ISO date in Japanese."""
    if isinstance(value, list):
        return "、".join(_shown(v) for v in value)
    text = str(value)
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        from datetime import date

        from shared_lib.dates import display_date

        return display_date(date.fromisoformat(text))
    return text


def reply_for(persona: Persona, code: str) -> str:
    """What the user reads when a violation with ``code`` blocks the turn (§4.7.1): what was
    stopped and what happens next, never an internal error; the persona's message for the code,
    else its ``constitution_violation`` message."""
    return persona.message(code if persona.has(code) else "constitution_violation")


def blocked(violations: list[ConstitutionViolation]) -> bool:
    return any(v.action == "block" for v in violations)
