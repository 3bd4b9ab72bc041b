"""The seven priorities of the guardian tree (seed 000 §5.3.3b) as ordered findings.

``findings`` yields every rule that matches, in tree order; the guardian takes the first
(first match wins) and reads further only to show every concern in one confirmation and
to re-check an approved action. A tier yields nothing when it has nothing to say.

    1 constitution  2 security  3 dangerous operations  4 company teachings
    5 confidence    6 parameters  7 consistency and dates  (8 confirmation requested)
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import date, datetime

from shared_lib.dates import display_date
from shared_lib.policy.claims import permission_claim
from shared_lib.policy.consistency import CallCheck, check_call
from shared_lib.policy.disclosure import Found, normalised
from shared_lib.policy.effective import Policy
from shared_lib.policy.subject import Subject
from shared_lib.policy.values import as_number, count_items, recipients, strings_in
from shared_lib.turn.decisions import Verdict

__all__ = ["findings", "permission_claim"]  # permission_claim: the brain's enforcer reads it here too


def findings(s: Subject, p: Policy, now: datetime) -> Iterator[Verdict]:
    yield from constitution(s, p)
    yield from security(s, p)
    yield from danger(s, p)
    yield from teachings(s, p, now)
    yield from confidence(s, p)
    yield from parameters(s, p)
    yield from consistency(s, p, now)
    yield from requested(s, p)


def constitution(s: Subject, p: Policy) -> Iterator[Verdict]:
    cfg = p.config.constitution
    claim = permission_claim(s, cfg) if s.origin == "proposer" else None
    if claim is not None:
        name = claim[0].name
        yield p.verdict("constitution.permission_decision", pattern=name, details={"pattern": name})
    if len(s.reasoning_summary.strip()) < cfg.min_reasoning_chars:
        yield p.verdict("constitution.missing_reasoning", details={"min_chars": cfg.min_reasoning_chars})


def security(s: Subject, p: Policy) -> Iterator[Verdict]:
    sec = p.config.security
    masked = s.scoped(["parameters"])  # the LLM arm's parameters carry placeholders, not values
    for pattern in sec.ng_patterns:
        in_params = "parameters" in pattern.scopes and any(pattern.masked_in(t) for t in masked)
        if in_params or any(sec.ng_found(pattern, t) for t in s.scoped(pattern.scopes)):
            yield p.verdict("security.ng_pattern", pattern=pattern.name, details={"pattern": pattern.name})
            break
    if s.origin == "system":  # fixed catalogue texts echo the user's own pending action back to them
        return
    outbound = {i for i, (name, _) in enumerate(s.calls) if sec.sends_out(name)}
    for secret in sec.confidential_patterns:  # a word that discloses a value, not a mere mention
        if any(sec.discloses(secret, t) for t in s.scoped(secret.scopes, parameters_of=outbound)):
            yield p.verdict("security.confidential", pattern=secret.name, details={"pattern": secret.name})
            return
    found = disclosure(s, p, outbound) or kept_disclosure(s, p)
    if found is not None:
        yield p.verdict("security.confidential", pattern=found.name, details={"pattern": found.name})


def kept_disclosure(s: Subject, p: Policy) -> Found | None:
    """A colleague's HR value (a grade, a salary, a personnel action) handed to a tool that keeps
    it (a memory read back later, in any room); the speaker's own value and contacts are kept."""
    sec = p.config.security
    grammar = sec.disclosure
    if grammar is None:
        return None
    for name, params in s.calls:
        if not sec.keeps(name):
            continue
        for text in strings_in(params):
            found = grammar.personal(text)
            if found and found.name in sec.kept_disclosures and found.subject not in (None, "@addressee"):
                return found
    return None


def disclosure(s: Subject, p: Policy, outbound: set[int]) -> Found | None:
    """The first value about a person or a deal that leaves the charter, read by the grammar.

    What the asker reads (an answer, a confirmation) may be read by the whole room; a message
    sent to exactly one person who is the value's subject (「田中さんの評価は…」 to 田中 alone,
    「あなたの…」 to one person) tells them their own value, which is no disclosure.
    """
    grammar = p.config.security.disclosure
    if grammar is None:
        return None
    read: list[tuple[str, list[str] | None]] = [
        (t, None) for t in s.scoped([x for x in grammar.scopes if x != "parameters"])
    ]
    if "parameters" in grammar.scopes:
        for index, (_, params) in enumerate(s.calls):
            if index in outbound:
                to = _addressees(params, p)
                read += [(t, to) for t in strings_in(params)]
    for text, to in read:
        found = grammar.personal(text) or grammar.deal(text)
        if found is not None and not _told_to_the_subject(found, to, grammar.person.honorifics):
            return found
    return None


def _addressees(params: dict[str, object], p: Policy) -> list[str] | None:
    cfg = p.config.parameters
    named: list[str] = []
    for key in cfg.recipient_keys:
        if key in params:
            everyone, _ = recipients(params[key], cfg.recipients_all_values)
            if everyone:
                return None
            named += strings_in(params[key])
    return named


def _told_to_the_subject(found: Found, to: list[str] | None, honorifics: str) -> bool:
    if found.subject is None or to is None or len(to) != 1:
        return False
    if found.subject == "@addressee":
        return True
    bare = re.sub(rf"(?:{honorifics})$", "", normalised(to[0]).replace(" ", "").replace("\u3000", ""))
    return bool(bare) and (bare.startswith(found.subject) or found.subject.startswith(bare))


def danger(s: Subject, p: Policy) -> Iterator[Verdict]:
    for name, _ in s.calls:
        rule = p.danger(name)
        if rule is None:
            continue
        info = {"tool_name": name, "risk": rule.risk}
        if rule.risk == "critical":
            yield p.verdict("danger.critical", tool=name, details=info)
        elif rule.action == "block":
            yield p.verdict("danger.blocked_operation", tool=name, details=info)
        elif rule.risk == "high":
            yield p.verdict("danger.high", tool=name, details=info)
        elif rule.risk == "medium" or rule.action == "confirm":
            yield p.verdict("danger.medium", tool=name, details=info)


def teachings(s: Subject, p: Policy, now: datetime) -> Iterator[Verdict]:
    local = now.astimezone(p.config.zone)
    texts = s.outward_texts()
    matched = [t for t in p.teachings if t.applies(s.calls, texts, local)]
    for effect, code in (("block", "teaching.violation"), ("confirm", "teaching.possible_violation")):
        for t in matched:
            if t.effect == effect:
                yield p.verdict(
                    code,
                    teaching=t.title,
                    teaching_text=t.text,
                    details={"teaching_id": t.id, "teaching": t.title, "teaching_text": t.text},
                )


def confidence(s: Subject, p: Policy) -> Iterator[Verdict]:
    # A clarification question is itself the low-confidence outcome; a fixed catalogue text
    # (origin "system") carries no model confidence at all.
    if s.kind == "clarification_needed" or s.origin == "system":
        return
    c, th = s.confidence, p.config.confidence
    info = {"confidence": c}
    if c < th.too_low:
        yield p.verdict("confidence.too_low", details=info)
    elif c < th.low:
        yield p.verdict("confidence.low", details={**info, "clarify": True})
    elif c < th.medium:
        yield p.verdict("confidence.medium", details={**info, "light": True})


def parameters(s: Subject, p: Policy) -> Iterator[Verdict]:
    cfg = p.config.parameters
    for name, params in s.calls:
        amounts = [a for k in cfg.amount_keys if k in params and (a := as_number(params[k])) is not None]
        if amounts and max(amounts) > cfg.amount_very_high:
            yield p.verdict("params.amount_very_high", amount=max(amounts), details={"amount": max(amounts)})
        elif amounts and max(amounts) > cfg.amount_high:
            yield p.verdict("params.amount_high", amount=max(amounts), details={"amount": max(amounts)})
        yield from _recipients(name, params, p)
        if any(re.search(pattern, name) for pattern in cfg.delete_tool_patterns):
            counts = [
                count_items(params[k], cfg.recipients_all_values)
                for k in cfg.delete_count_keys
                if k in params
            ]
            total = None if None in counts else sum(c for c in counts if c is not None)
            if total is None or total > 1:
                shown = str(total) if total is not None else "全"
                yield p.verdict(
                    "params.delete_multiple", count=shown, details={"tool_name": name, "count": total}
                )
            else:
                yield p.verdict("params.delete_single", details={"tool_name": name, "count": 1})


def _recipients(name: str, params: dict[str, object], p: Policy) -> Iterator[Verdict]:
    cfg = p.config.parameters
    everyone, count = False, 0
    for key in cfg.recipient_keys:
        if key in params:
            is_all, n = recipients(params[key], cfg.recipients_all_values)
            everyone, count = everyone or is_all, count + n
    content = next((str(params[k]) for k in cfg.content_keys if k in params), "")
    info = {"tool_name": name, "count": count}
    group = next((str(params[k]).strip() for k in cfg.group_keys if str(params.get(k) or "").strip()), "")
    if group:  # everyone of a department (the handler counts them): what and to whom, asked once
        yield p.verdict(
            "params.recipients_group",
            group=group[:50],
            content=content[:200],
            details={**info, "group": group, "content": content},
        )
    elif everyone:
        yield p.verdict("params.recipients_all", details={**info, "everyone": True})
    elif count >= cfg.recipients_many_content:
        yield p.verdict(
            "params.recipients_many_10",
            count=count,
            content=content[:200],
            details={**info, "content": content},
        )
    elif count >= cfg.recipients_many:
        yield p.verdict("params.recipients_many", count=count, details=info)


def consistency(s: Subject, p: Policy, now: datetime) -> Iterator[Verdict]:
    if not s.calls:
        return
    local = now.astimezone(p.config.zone)
    today = local.date()
    checks = [check_call(params, p.config, local) for _, params in s.calls]
    problems = [msg for c in checks for msg in c.problems]
    changed = [i for i, c in enumerate(checks) if c.changed]
    if len(s.calls) > 1 and changed:
        # the executor applies corrected parameters to every call, so only one call can be corrected
        fields = "、".join(k for i in changed for k in checks[i].changed)
        problems.append(p.config.message("consistency.problem.several_calls", fields=fields))
    if problems:
        yield p.verdict("consistency.unfixable", problem="、".join(problems), details={"problems": problems})
    yield from _date_questions(checks, p, today)
    for c in checks:
        for key, day in c.past:  # the reading, shown, never moved (「11月20日（金）」)
            yield p.verdict(
                "date.past",
                date=display_date(day, today=today),
                details={"key": key, "date": day.isoformat()},
            )
        for key, day, days in c.far:
            yield p.verdict(
                "date.far_future",
                date=display_date(day, today=today),
                days=days,
                details={"key": key, "date": day.isoformat(), "days": days},
            )
    if len(s.calls) == 1 and changed:
        yield p.verdict(
            "consistency.modified",
            fields="、".join(checks[0].changed),
            parameters=checks[0].corrected,
            details={"fields": checks[0].changed},
        )


def _date_questions(checks: list[CallCheck], p: Policy, today: date) -> Iterator[Verdict]:
    """What the user must say before a date is used: a value the reader cannot read is a
    question (「いつにするウル？」, answered with a date, never with 「はい」); a reading in doubt
    is shown for confirmation with why."""
    for c in checks:
        for key, said in c.unreadable:
            yield p.verdict("date.unreadable", key=key, value=said, details={"key": key, "value": said})
        for key, said, reading in c.doubtful:
            day = reading.deadline
            if day is None or reading.doubt is None:  # a doubt is only ever recorded with its day
                continue
            why = p.config.message(
                f"date.ambiguous.{reading.doubt}", value=said, date=display_date(day, today=today)
            )
            yield p.verdict(
                "date.ambiguous",
                date=display_date(day, today=today),
                why=why,
                details={"key": key, "value": said, "date": day.isoformat(), "doubt": reading.doubt},
            )


def requested(s: Subject, p: Policy) -> Iterator[Verdict]:
    asked = [name for name, _ in s.calls if p.requires_confirmation(name)]
    if s.needs_confirmation or asked:
        yield p.verdict(
            "confirmation.requested", details={"by": "registry" if asked else "proposer", "tools": asked}
        )
