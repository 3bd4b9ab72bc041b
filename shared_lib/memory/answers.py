"""The JSON answer of a background memory call (a digest, an event episode, tags): asked with
``call_type="summary"``, validated against a pydantic model, retried once with the reason the
first answer was refused; a second bad answer raises ``LLMOutputError`` (nothing is stored).

The system text starts with a marker naming the job (``[[charter-memory:daily_digest]]``):
the fake LLM of the local stack recognises the call by it (``infra/fake_llm/memory_jobs.py``).

>>> marker("tagging")
'[[charter-memory:tagging]]'
>>> extract_json('```json\\n{"a": 1}\\n```')
'{"a": 1}'
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from shared_lib.errors import LLMOutputError
from shared_lib.ports import LLM, LLMRequest
from shared_lib.privacy.sanitizer import Sanitizer

M = TypeVar("M", bound=BaseModel)
ATTEMPTS = 2  # the first answer and one retry
_SHOWN_ERROR_CHARS = 300
_SHOWN_ANSWER_CHARS = 2000


def marker(job: str) -> str:
    """The first line of a memory job's system text."""
    return f"[[charter-memory:{job}]]"


def extract_json(text: str) -> str:
    """The JSON value inside an answer: code fences and prose around it are dropped."""
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not starts:
        return text.strip()
    start = min(starts)
    end = text.rfind("}" if text[start] == "{" else "]")
    return text[start : end + 1] if end > start else text[start:]


def _refusal(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "(全体)"
        return f"{where}: {first.get('msg', '')}"[:_SHOWN_ERROR_CHARS]
    return str(exc)[:_SHOWN_ERROR_CHARS]


def ask_json(
    llm: LLM,
    *,
    job: str,
    model: str,
    system: str,
    user: str,
    answer: type[M],
    max_tokens: int = 2048,
    check: Callable[[M], None] | None = None,
) -> M:
    """``answer`` parsed from the model's JSON (and passing ``check``, which raises
    ``ValueError`` with the reason to refuse it); one retry, then ``LLMOutputError``.

    The user message is masked here, whatever the caller built it from (a turn's own words, a
    tool's result): no secret or personal value reaches a model from a memory job."""
    messages: list[dict[str, object]] = [{"role": "user", "content": Sanitizer.default().mask_stored(user)}]
    refused = ""
    for _ in range(ATTEMPTS):
        request = LLMRequest(
            call_type="summary",
            model=model,
            max_tokens=max_tokens,
            system=[{"type": "text", "text": f"{marker(job)}\n{system}"}],
            messages=messages,
            temperature=0.2,
        )
        text = llm.complete(request).text()
        try:
            parsed = answer.model_validate_json(extract_json(text))
            if check is not None:
                check(parsed)
            return parsed
        except (ValidationError, json.JSONDecodeError, ValueError) as exc:
            refused = _refusal(exc)
        messages = [
            *messages,
            {"role": "assistant", "content": text[:_SHOWN_ANSWER_CHARS] or "（空の回答）"},
            {
                "role": "user",
                "content": f"前の回答は指定の形式ではありませんでした（{refused}）。"
                "指定されたJSONだけを、説明や前置きなしで返してください。",
            },
        ]
    raise LLMOutputError("memory_answer_invalid", f"{job}: {refused}")
