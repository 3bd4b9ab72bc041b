"""The LLM brain: asks Claude for a proposal through the forced ``submit_proposal`` tool.

One answer is judged in this order: a ``submit_proposal`` call exists → the
constitution's raw inspection removes decision keys (§4.4.1-4.4.4) → the shape, the tool
names and each tool's parameter model are validated → the reasoning is long enough
(§4.3.8) → the dialog policy (seed 004 §9: one question per reply, at most 3 options;
``dialog_policy``) → permission decisions and execution assertions are looked for (§4.4.2,
§4.4.1) → the confidence table applies (§5.2.3b). An answer that fails is retried once
with guidance (a permission claim in the words too: the guidance names the claim to remove or
rephrase, and a second claim blocks; a decision key blocks at once); a second failure becomes a clarification question (``parse_error``
fallback of §6.7.3), except the dialog policy's: after the retry its cut is made by code
(the first question and the first options are kept). A ``block`` violation replaces the proposal by the persona's message
for its code (``constitution.reply_for``); the guardian blocks the turn on the same record.
See ``README.md`` in this package for why the decision is a forced tool.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shared_lib.brain import constitution, dialog_policy
from shared_lib.brain.confidence import apply_band
from shared_lib.brain.config import Band, BrainConfig
from shared_lib.brain.continuation import Recorder, complete
from shared_lib.brain.execution_claims import Said
from shared_lib.brain.prompt import Prompt, proposal_request
from shared_lib.brain.tool_defs import DECISION_TOOL
from shared_lib.brain.validation import InvalidProposal, validate_proposal
from shared_lib.errors import BrainError
from shared_lib.persona.catalogue import Persona
from shared_lib.policy.config import PolicyConfig
from shared_lib.ports import LLM, LLMResponse
from shared_lib.tools.registry import ToolRegistry
from shared_lib.turn.envelope import ConstitutionViolation
from shared_lib.turn.proposal import Proposal


@dataclass
class BrainResult:
    proposal: Proposal
    attempts: int
    violations: list[ConstitutionViolation] = field(default_factory=list)
    errors: list[BrainError] = field(default_factory=list)
    band: Band | None = None
    dropped: list[str] = field(default_factory=list)  # undeclared parameters removed (§4.4.3)
    trimmed: list[str] = field(default_factory=list)  # dialog-policy cuts after the retry

    @property
    def parse_failed(self) -> bool:
        return any(e.code == "parse_error" for e in self.errors)


@dataclass
class _Judged:
    proposal: Proposal | None
    violations: list[ConstitutionViolation]
    guidance: str = ""
    code: str = "parse_error"
    dropped: list[str] = field(default_factory=list)
    trimmed: list[str] = field(default_factory=list)


def propose(
    llm: LLM,
    prompt: Prompt,
    *,
    persona: Persona,
    registry: ToolRegistry,
    cfg: BrainConfig,
    model: str,
    max_tokens: int,
    record: Recorder,
    policy: PolicyConfig,
    said: Said | None = None,
) -> BrainResult:
    """Raises ``LLMError`` when the LLM cannot be reached (calls made so far are recorded)."""
    violations: list[ConstitutionViolation] = []
    errors: list[BrainError] = []
    previous: LLMResponse | None = None
    guidance = ""
    for attempt in (1, 2):
        request = proposal_request(
            prompt,
            model=model,
            max_tokens=max_tokens,
            stream=cfg.stream,
            previous=previous,
            guidance=guidance,
        )
        done = complete(
            llm, request, max_continuations=cfg.max_continuations, cap=cfg.max_tokens.cap, record=record
        )
        judged = judge(
            done.response,
            registry=registry,
            cfg=cfg,
            persona=persona,
            policy=policy,
            last=attempt == 2,
            said=said or Said(user_text=prompt.user_text),
        )
        violations += judged.violations
        if judged.proposal is not None:
            result = _finish(judged.proposal, attempt, violations, errors, cfg, persona, registry)
            result.dropped, result.trimmed = judged.dropped, judged.trimmed
            return result
        previous, guidance = done.response, judged.guidance
        errors.append(
            BrainError.of(
                "invalid_tool_call" if attempt == 1 else "parse_error",
                f"attempt {attempt}: {guidance}",
                layer="brain",
                kind=judged.code,
            )
        )
    fallback = parse_error_clarification(persona, guidance)
    return _finish(fallback, 2, violations, errors, cfg, persona, registry, from_llm=False)


def judge(
    response: LLMResponse,
    *,
    registry: ToolRegistry,
    cfg: BrainConfig,
    persona: Persona,
    policy: PolicyConfig,
    last: bool,
    said: Said | None = None,
) -> _Judged:
    uses = response.tool_uses(DECISION_TOOL)
    if not uses:
        cut = (
            " (the answer was cut by max_tokens: be more concise)"
            if response.stop_reason == "max_tokens"
            else ""
        )
        return _Judged(None, [], f"no {DECISION_TOOL} call in the answer{cut}")
    dropped: list[str] = []
    raw, found = constitution.inspect_raw(uses[0].get("input"), registry, cfg.constitution, dropped)
    try:
        proposal = validate_proposal(raw, registry)
    except InvalidProposal as exc:
        return _Judged(None, found, str(exc), exc.code)
    problem = constitution.reasoning_problem(proposal, cfg.reasoning_min_chars)
    if problem and not last:
        return _Judged(None, [*found, constitution.violation("4.3.8", problem, "retry")], problem)
    if problem:
        found.append(constitution.violation("4.3.8", problem, "block"))
    dialog = dialog_policy.check(proposal)
    if dialog and not last:
        return _Judged(None, found, dialog.guidance, dialog.code)
    proposal, more = constitution.inspect_proposal(proposal, cfg, persona, policy, said, registry=registry)
    claims = [v for v in more if v.code == "constitution.permission_decision"]
    if claims and not last and not constitution.blocked(found):
        # a permission claim in the words is retried once with the claim named (§4.7.1, as 4.3.8);
        # the checker, never the model, judges the second answer
        retried = [v.model_copy(update={"action": "retry"}) for v in claims]
        return _Judged(None, found + retried, constitution.permission_guidance(claims), "permission_decision")
    proposal, trimmed = dialog_policy.enforce(proposal)
    return _Judged(proposal, found + more, dropped=dropped, trimmed=trimmed)


def _finish(
    proposal: Proposal,
    attempts: int,
    violations: list[ConstitutionViolation],
    errors: list[BrainError],
    cfg: BrainConfig,
    persona: Persona,
    registry: ToolRegistry,
    *,
    from_llm: bool = True,
) -> BrainResult:
    """A blocking violation withdraws the proposal; the confidence table applies to the LLM's own."""
    if constitution.blocked(violations):
        codes = ", ".join(sorted({v.code for v in violations if v.action == "block"}))
        first = next(v.code for v in violations if v.action == "block")
        return BrainResult(
            fixed_text(
                constitution.reply_for(persona, first),
                f"憲法違反（{codes}）を検出したため、提案を取り下げて定型文で応答する",
                0.0,
            ),
            attempts,
            violations,
            errors,
        )
    if not from_llm:
        return BrainResult(proposal, attempts, violations, errors)
    proposal, band = apply_band(proposal, cfg, persona, registry)
    return BrainResult(proposal, attempts, violations, errors, band)


def fixed_text(text: str, why: str, confidence: float = 1.0) -> Proposal:
    """A text proposal written by fixed logic (never by the LLM)."""
    return Proposal.model_validate(
        {
            "output_type": "text_response",
            "reasoning": {"intent_understanding": why, "no_tool_reason": "固定の応答で答える状況のため"},
            "confidence": {"overall": confidence},
            "text_response": text,
        }
    )


def parse_error_clarification(persona: Persona, why: str) -> Proposal:
    return Proposal.model_validate(
        {
            "output_type": "clarification_needed",
            "reasoning": {
                "ambiguity_detected": f"LLMの出力を検証できなかった: {why[:200]}",
                "possible_interpretations": ["ユーザーに具体的に聞き直す"],
            },
            "confidence": {"overall": 0.0},
            "clarification_question": persona.message("parse_error"),
        }
    )
