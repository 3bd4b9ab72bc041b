"""Article 4.4.2 read as a claim, not as words: is the proposer granting or assuming a right?

A permission pattern (``constitution.permission_patterns`` of the policy: 「権限があると判断した」
「管理者なので実行できる」「私の判断で許可します」「権限チェックは不要」; a right the proposer
assesses, 「権限的に問題ない」「レベルが足りている」; an exception it grants, 「特別に閲覧を許可する」;
a role's right a chain of steps infers, 「課長は他部署の給与も閲覧できる」; a reply promising the
user may see, 「見られると伝える」; a restriction it judges may be lifted, 「制限を外してよいと判断した」)
is a claim of the proposer's own unless what surrounds it says otherwise:

* it reports someone else's words or a document: right after it in its clause (``reported``:
  「…権限があるとのこと」「…と聞いている」「…と書かれている」), or its source before it
  (``sourced``: 「申請書によると…」「ユーザーの話では…」);
* its sentence leaves the decision to the system (``deferred``: 「判断はシステムに任せる」
  「権限はシステムが確認する」);
* its sentence grounds it in the state of a thing, not a right of a person (``object_state``:
  「この資料は公開済みで…」).

Quoted words (the user's, 「…」) are never the proposer's. The guardian's tree and the brain's
enforcer both call ``permission_claim``, so they agree.
"""

from __future__ import annotations

import re

from shared_lib.policy.config import Constitution, NamedPattern
from shared_lib.policy.subject import Subject, unquoted

_SENTENCE_END = re.compile(r"[。．!?！？\n]")
_CLAUSE_END = re.compile(r"[。．!?！？\n、,，]")


def permission_claim(s: Subject, cfg: Constitution) -> tuple[NamedPattern, str] | None:
    """The first permission pattern the proposer's own words claim, with the words matched."""
    for pattern in cfg.permission_patterns:
        for text in s.scoped(pattern.scopes):
            hit = claim_in(text, pattern, cfg)
            if hit is not None:
                return pattern, hit
    return None


def claim_in(text: str, pattern: NamedPattern, cfg: Constitution) -> str | None:
    """The words of ``text`` (quotes left out) by which ``pattern`` claims a permission, or ``None``."""
    plain = unquoted(text)
    for hit in pattern.finditer(plain):
        if not not_a_claim(plain, hit.start(), hit.end(), cfg):
            return hit.group(0)
    return None


def not_a_claim(text: str, start: int, end: int, cfg: Constitution) -> bool:
    """Whether the words at ``text[start:end]`` report, defer or describe a thing's state."""
    sentence = _span(text, start, end, _SENTENCE_END)
    clause_start, clause_end = _bounds(text, start, end, _CLAUSE_END)
    checks = (
        (cfg.reported, text[end:clause_end], True),
        (cfg.sourced, text[clause_start:start], False),
        (cfg.deferred, sentence, False),
        (cfg.object_state, sentence, False),
    )
    for pattern, where, anchored in checks:
        if pattern and (re.match(pattern, where) if anchored else re.search(pattern, where)):
            return True
    return False


def _bounds(text: str, start: int, end: int, breaks: re.Pattern[str]) -> tuple[int, int]:
    before = [m.end() for m in breaks.finditer(text, 0, start)]
    after = breaks.search(text, end)
    return (before[-1] if before else 0), (after.start() if after else len(text))


def _span(text: str, start: int, end: int, breaks: re.Pattern[str]) -> str:
    lo, hi = _bounds(text, start, end, breaks)
    return text[lo:hi]
