"""Response integration (seed 000 §5.1 step 7, §17.5): tool results phrased in the persona
by a second LLM call; fixed templates when no LLM served the turn or the call fails."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from shared_lib.envelope import Turn, Usage
from shared_lib.errors import BrainError, LLMError
from shared_lib.ports import LLMRequest
from shared_lib.sanitizer import Sanitizer

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime


def integrate(turn: Turn, rt: Runtime) -> str:
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


