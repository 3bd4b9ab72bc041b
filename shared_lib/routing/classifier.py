"""The classifier: its output checked, its verdict gated, and a callable built from the LLM port.

The router takes the classifier as a plain callable ``classify(text) -> str`` (the model's
raw answer), so it stays free of LLM plumbing; ``llm_classifier`` builds one from the
``LLM`` port: the fixed one-page prompt of ``routing.json`` as the system block, the
user's text masked by the sanitizer (as every LLM input is) and framed as data.

An answer is used only when it is exactly one JSON object (whitespace around it aside)
with a ``route`` of the six and a numeric ``confidence`` in [0, 1]; ``reason`` (a string)
and ``evidence`` (a list of strings, the first two kept) are optional; any other key, or
text before or after the object, and the answer is discarded (seed 003 分類器の故障時仕様).
``parse_verdict`` says why with a stable code (``invalid_json``, ``extra_text``,
``missing_route``, …) that the decision records as ``classifier_error``.

>>> parse_verdict('{"route": "PLAN", "confidence": 0.7, "reason": "段取り"}')[0].route.value
'PLAN'
>>> parse_verdict('はい: {"route": "PLAN", "confidence": 0.7}')[1]
'invalid_json'
>>> parse_verdict('{"route": "PLAN", "confidence": true}')[1]
'confidence_not_a_number'
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from shared_lib.ports import LLM, LLMRequest, LLMResponse
from shared_lib.privacy.sanitizer import Sanitizer
from shared_lib.routing.config import RoutingConfig, load_routing_config
from shared_lib.routing.model import MAX_EVIDENCE, Route, Score
from shared_lib.routing.rules import clip, code_evidence

Classify = Callable[[str], str]
KEYS = frozenset({"route", "confidence", "reason", "evidence"})
REASON_CHARS = 200


class ClassifierVerdict(BaseModel):
    """A classifier answer that passed every check (not yet adopted: see ``gate``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    route: Route
    confidence: Score
    reason: str = ""
    evidence: Annotated[list[str], Field(max_length=MAX_EVIDENCE)] = Field(default_factory=list)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"not JSON: {name}")  # NaN, Infinity: Python's json accepts them, JSON does not


def _object(raw: str) -> tuple[dict[str, Any] | None, str | None]:
    text = raw.strip()
    try:
        value, end = json.JSONDecoder(parse_constant=_reject_constant).raw_decode(text)
    except ValueError:
        return None, "invalid_json"
    if end != len(text):
        return None, "extra_text"
    if not isinstance(value, dict):
        return None, "not_an_object"
    return value, None


def parse_verdict(raw: object) -> tuple[ClassifierVerdict | None, str | None]:
    """The verdict in ``raw``, or ``None`` and the code of the first reason to discard it."""
    if not isinstance(raw, str):
        return None, "not_text"
    data, error = _object(raw)
    if data is None:
        return None, error
    if "route" not in data:
        return None, "missing_route"
    if "confidence" not in data:
        return None, "missing_confidence"
    if set(data) - KEYS:
        return None, "unexpected_keys"
    route, confidence = data["route"], data["confidence"]
    if not isinstance(route, str) or route not in Route.__members__:
        return None, "unknown_route"
    if isinstance(confidence, bool) or not isinstance(confidence, int | float):
        return None, "confidence_not_a_number"
    if not (math.isfinite(confidence) and 0.0 <= confidence <= 1.0):
        return None, "confidence_out_of_range"
    reason, evidence = data.get("reason", ""), data.get("evidence", [])
    if not isinstance(reason, str):
        return None, "reason_not_a_string"
    if not isinstance(evidence, list) or not all(isinstance(e, str) for e in evidence):
        return None, "evidence_not_strings"
    return (
        ClassifierVerdict(
            route=Route(route),
            confidence=float(confidence),
            reason=clip(reason, REASON_CHARS),
            evidence=[clip(e) for e in evidence if e.strip()][:MAX_EVIDENCE],
        ),
        None,
    )


@dataclass(frozen=True)
class Gate:
    """Whether the router adopts a verdict, and why (or why not)."""

    adopted: bool
    reason: str


def gate(verdict: ClassifierVerdict, text: str, config: RoutingConfig) -> Gate:
    """The adoption gate: ``min_confidence`` for every route; CODE also needs
    ``min_confidence_for_code`` and strong evidence the CODE rules find in ``text`` itself."""
    cfg = config.classifier
    if verdict.confidence < cfg.min_confidence:
        return Gate(False, f"low confidence {verdict.confidence:.2f} < {cfg.min_confidence:.2f}")
    if verdict.route is Route.CODE:
        if verdict.confidence < cfg.min_confidence_for_code:
            return Gate(
                False,
                f"CODE needs confidence >= {cfg.min_confidence_for_code:.2f} ({verdict.confidence:.2f})",
            )
        hit = code_evidence(text, config)
        if hit is None:
            return Gate(False, "CODE without strong evidence in the text")
        return Gate(True, f"classifier: CODE, evidence re-checked by {hit.rule.id}")
    return Gate(True, f"classifier: {verdict.route.value}")


def llm_classifier(
    llm: LLM,
    *,
    model: str,
    config: RoutingConfig | None = None,
    sanitizer: Sanitizer | None = None,
    record: Callable[[LLMRequest, LLMResponse], object] | None = None,
) -> Classify:
    """A ``classify`` callable over ``llm``: one call per use, masked input, the fixed prompt.

    The input is clipped to ``classifier.max_input_chars`` and framed as data between
    ``<input>`` tags (a closing tag inside the text is defused); ``LLMError`` propagates
    and the router records it as ``classifier_raised``. ``record`` gets each answered call
    (a turn counts its usage and cost with it).
    """
    cfg = config or load_routing_config()
    masker = sanitizer or Sanitizer.default()
    system = [{"type": "text", "text": cfg.classifier.prompt()}]

    def classify(text: str) -> str:
        masked = masker.mask(text[: cfg.classifier.max_input_chars])[0]
        framed = "<input>\n" + masked.replace("</input>", "<\\/input>") + "\n</input>"
        request = LLMRequest(
            call_type="routing",
            model=model,
            max_tokens=cfg.classifier.max_tokens,
            system=system,
            messages=[{"role": "user", "content": framed}],
            # no temperature: the Anthropic SDK in use rejects the argument (TypeError), and the
            # fixed prompt plus the adoption gate make the verdict's spread harmless
        )
        response = llm.complete(request)
        if record is not None:
            record(request, response)
        return response.text()

    return classify
