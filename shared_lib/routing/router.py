"""The router: one input's route, in the fixed order of seed 003 (ルーティング決定ルール).

1. an explicit command at the head of the input (``commands``);
2. the rule dictionary's strong evidence (``rules``, data in ``config/routing.json``);
3. the classifier, called at most once and only when neither decided, its answer checked
   and gated (``classifier``);
4. otherwise the safe side: CHAT (``source="fallback"``).

Whatever decided, CODE while ``local_only`` holds is refused: the route becomes CHAT with
``flags.refused="code_needs_cloud"`` and ``guidance="route.code_local_only"``, a code the
persona phrases ("``/cloud`` lifts it"). While ``local_only`` holds the classifier is not
called either, unless the caller says it runs locally (``local_classifier=True``): the
only LLM of the product is a cloud model, and ``/local`` forbids the cloud (seed 003
セキュリティ).

A channel of ``config/routing.json`` ``delegation.channels`` (LINE) starts every input in CHAT
(``source="channel"``, ``flags.forced="line_forced_chat"``, seed 002 §2.6): no route command,
rule or classifier sends it to another route; ``/local`` and ``/cloud`` still hold, and the
conversation model hands work on by the DELEGATE protocol (``shared_lib.routing.delegate``),
which the loop controller takes as its one re-route.

Evidence and reasons are masked by the sanitizer: a decision is logged and printed.

>>> decide("/code ログイン画面を作って").primary_route.value
'CODE'
>>> d = decide("/local /code ログイン画面を作って")
>>> d.primary_route.value, d.flags.refused, d.guidance
('CHAT', 'code_needs_cloud', 'route.code_local_only')
>>> d = decide("/code main.py を直して", channel="line")
>>> d.primary_route.value, d.source, d.flags.forced
('CHAT', 'channel', 'line_forced_chat')
>>> announcement(Route.CHAT, Route.PLAN)
'段取りを組むウル🐺'
>>> announcement_line(RouteSection(route="ANALYZE", source="rules", previous_route="CHAT"), arm="llm", kind="reply")
'整理して分析するウル🐺'
"""

from __future__ import annotations

from shared_lib.privacy.sanitizer import Sanitizer
from shared_lib.routing.classifier import Classify, gate, parse_verdict
from shared_lib.routing.commands import Commands, split_commands
from shared_lib.routing.config import RoutingConfig, load_routing_config
from shared_lib.routing.model import GUIDANCE_CODE_LOCAL_ONLY, Route, RoutingDecision, RoutingFlags, Source
from shared_lib.routing.rules import clip, first_match
from shared_lib.turn.envelope import RouteSection

NO_CLASSIFIER = "no classifier configured"
NOT_IN_LOCAL_ONLY = "local_only: the classifier is a cloud model and was not called"
# The arms that worked on the route (a greeting, a confirmation's answer, the kill switch and
# the router's own catalogue answers did not) and the replies that say what is done now
# (a block, a denial or an error says nothing was).
ANNOUNCED_ARMS = frozenset({"llm", "legacy"})
ANNOUNCED_KINDS = frozenset({"reply", "clarify", "confirm"})


def decide(
    text: str,
    *,
    local_only: bool = False,
    classify: Classify | None = None,
    config: RoutingConfig | None = None,
    local_classifier: bool = False,
    channel: str | None = None,
) -> RoutingDecision:
    """The route of ``text``; ``local_only`` is the conversation's state before this input,
    ``channel`` the channel it came from (a channel fixed to CHAT starts it there)."""
    cfg = config or load_routing_config()
    commands = split_commands(text)
    local = local_only if commands.local_only is None else commands.local_only
    flags = RoutingFlags(local_only=local)
    forced = channel is not None and channel in cfg.delegation.channels
    if forced and commands.rest.strip():
        said = f" ({' '.join(commands.tokens)} is no route here)" if commands.route is not None else ""
        reason = f"{channel}_forced_chat: work for another route is delegated{said}"
        decision = _decided(
            commands,
            Route.CHAT,
            "channel",
            reason,
            flags.model_copy(update={"forced": f"{channel}_forced_chat"}),
        )
    elif commands.route is not None and not forced:
        decision = _decided(
            commands, commands.route, "command", f"command /{commands.route.value.lower()}", flags
        )
    elif not commands.rest.strip():
        reason = "only " + " ".join(commands.tokens) if commands.tokens else "empty text"
        decision = _decided(commands, Route.CHAT, "command" if commands.tokens else "fallback", reason, flags)
    elif hit := first_match(commands.rest, cfg):
        reason = f"rule {hit.rule.id}"
        decision = _decided(
            commands, hit.rule.route, "rules", reason, flags, evidence=hit.evidence, rule_id=hit.rule.id
        )
    elif classify is None:
        decision = _fallback(commands, NO_CLASSIFIER, flags)
    elif local and not local_classifier:
        decision = _fallback(commands, NOT_IN_LOCAL_ONLY, flags)
    else:
        decision = _classified(commands, classify, cfg, flags)
    return _refuse_code_when_local(decision)


def announcement(previous: Route | None, route: Route, config: RoutingConfig | None = None) -> str | None:
    """The one line that tells the user what happens now, only when the route changed.

    ``previous`` is the primary route of the previous reply (``None``: there was none, which
    counts as a change); CHAT has no line (seed 003 ユーザーへの可視化).
    """
    if previous is route:
        return None
    return (config or load_routing_config()).announcements.get(route)


def announcement_line(
    route: RouteSection, *, arm: str, kind: str, config: RoutingConfig | None = None
) -> str | None:
    """The line a reply starts with: the route changed since the previous reply (seed 003
    ユーザーへの可視化), an arm worked on it, and the reply says what is done now."""
    if arm not in ANNOUNCED_ARMS or kind not in ANNOUNCED_KINDS or route.route not in Route.__members__:
        return None
    previous = Route.__members__.get(route.previous_route or "")
    return announcement(previous, Route(route.route), config)


def _decided(
    commands: Commands,
    route: Route,
    source: Source,
    reason: str,
    flags: RoutingFlags,
    *,
    evidence: tuple[str, ...] | list[str] = (),
    confidence: float = 1.0,
    rule_id: str | None = None,
) -> RoutingDecision:
    masker = Sanitizer.default()
    return RoutingDecision(
        primary_route=route,
        source=source,
        confidence=confidence if source != "fallback" else 0.0,
        reason=masker.mask_text(reason),
        evidence=[masker.mask_text(e) for e in evidence],
        rule_id=rule_id,
        commands=list(commands.tokens),
        flags=flags,
    )


def _fallback(commands: Commands, reason: str, flags: RoutingFlags) -> RoutingDecision:
    return _decided(commands, Route.CHAT, "fallback", reason, flags)


def _classified(
    commands: Commands, classify: Classify, config: RoutingConfig, flags: RoutingFlags
) -> RoutingDecision:
    """The one classifier call; a failure or a verdict the gate refuses is a CHAT fallback."""
    called = flags.model_copy(update={"classifier_called": True})
    try:
        raw = classify(commands.rest)
    except Exception as exc:  # any failure of the call is the seed's "分類器呼び出し自体が失敗"
        raised = f"classifier_raised: {type(exc).__name__}"
        return _fallback(
            commands, f"classifier failed ({raised})", called.model_copy(update={"classifier_error": raised})
        )
    verdict, error = parse_verdict(raw)
    if verdict is None:
        failed = called.model_copy(update={"classifier_error": error})
        return _fallback(commands, f"classifier output discarded ({error})", failed)
    said = called.model_copy(
        update={"classifier_route": verdict.route, "classifier_confidence": verdict.confidence}
    )
    verdict_gate = gate(verdict, commands.rest, config)
    if not verdict_gate.adopted:
        return _fallback(commands, f"classifier not adopted: {verdict_gate.reason}", said)
    reason = verdict_gate.reason + (f" ({verdict.reason})" if verdict.reason else "")
    return _decided(
        commands,
        verdict.route,
        "classifier",
        clip(reason, 200),
        said,
        evidence=verdict.evidence,
        confidence=verdict.confidence,
    )


def _refuse_code_when_local(decision: RoutingDecision) -> RoutingDecision:
    if decision.primary_route is not Route.CODE or not decision.flags.local_only:
        return decision
    return decision.model_copy(
        update={
            "primary_route": Route.CHAT,
            "reason": f"CODE refused while local_only ({decision.reason}); /cloud lifts it",
            "guidance": GUIDANCE_CODE_LOCAL_ONLY,
            "flags": decision.flags.model_copy(update={"refused": "code_needs_cloud"}),
        }
    )
