"""The rule dictionary at work: the first rule of strong evidence that matches a text.

Rules are tried highest priority first, then in the file's order; the first whose
conditions all hold decides. Only the first ``max_scan_chars`` characters are read, so a
huge paste costs a bounded scan. ``code_evidence`` is the same test restricted to the CODE
rules: the router asks it again before it adopts a classifier's CODE (seed 003 Router側の
採用ゲート: "強い証拠の再確認").

>>> from shared_lib.routing.config import load_routing_config
>>> hit = first_match("Traceback (most recent call last):", load_routing_config())
>>> hit.rule.id, hit.evidence
('code.stack_trace', ('Traceback (most recent call last):',))
>>> first_match("今日はいい天気ですね", load_routing_config()) is None
True
"""

from __future__ import annotations

from dataclasses import dataclass

from shared_lib.routing.config import EVIDENCE_CHARS, RoutingConfig, Rule
from shared_lib.routing.model import MAX_EVIDENCE, Route


@dataclass(frozen=True)
class RuleHit:
    """A rule that matched, with up to two fragments of the text that made it match."""

    rule: Rule
    evidence: tuple[str, ...]


def clip(fragment: str, limit: int = EVIDENCE_CHARS) -> str:
    """One line of at most ``limit`` characters (evidence is for people reading a log)."""
    line = " ".join(fragment.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def match_rule(rule: Rule, text: str) -> RuleHit | None:
    """``rule``'s hit on ``text`` when every condition holds."""
    fragments = []
    for condition in rule.when:
        fragment = condition.holds(text)
        if fragment is None:
            return None
        fragments.append(clip(fragment))
    return RuleHit(rule, tuple(f for f in fragments if f)[:MAX_EVIDENCE])


def first_match(text: str, config: RoutingConfig, *, route: Route | None = None) -> RuleHit | None:
    """The deciding rule for ``text`` (only ``route``'s rules when given), or ``None``."""
    scanned = text[: config.max_scan_chars]
    for rule in config.ordered_rules():
        if route is not None and rule.route is not route:
            continue
        if hit := match_rule(rule, scanned):
            return hit
    return None


def code_evidence(text: str, config: RoutingConfig) -> RuleHit | None:
    """The first CODE rule that matches ``text``: strong evidence for code, or ``None``."""
    return first_match(text, config, route=Route.CODE)
