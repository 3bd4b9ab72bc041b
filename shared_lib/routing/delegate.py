"""The DELEGATE protocol (seed 002 §2.6, seed 003 最終更新): how the conversation model hands work on.

A channel whose input is fixed to CHAT (LINE: ``line_forced_chat``; the list is
``config/routing.json`` ``delegation.channels``) never reaches another route through the front
router. The conversation model answers, or, when the work is another route's, says so in its
reply with two lines of the protocol::

    DELEGATE: CODE
    TASK: ログイン画面のバリデーションを直す差分を作る

``DELEGATE`` names one of PLAN ANALYZE OPS RESEARCH CODE CODE1 CODE2 CODE3 (the three coders
are CODE with the coder named); ``TASK`` says the work in one line. ``read`` finds the block
and checks it strictly: exactly one ``DELEGATE`` line with a known route, exactly one
non-empty ``TASK`` line; a reply with a ``DELEGATE`` line and anything else is a broken block,
which delegates nothing (a ``TASK:`` line without ``DELEGATE`` is an ordinary reply's text). The loop controller decides whether a well-formed delegation is taken (as
its one re-route, with the re-route's checks); the protocol's lines never reach the user
(``without_protocol``).

>>> d = read("承知しました。\\nDELEGATE: CODE2\\nTASK: CSVの集計スクリプトを直す")
>>> d.delegation.route.value, d.delegation.coder, d.delegation.task, d.error
('CODE', 'CODE2', 'CSVの集計スクリプトを直す', '')
>>> read("DELEGATE: DEPLOY\\nTASK: 本番に出す").error
'unknown_route: DEPLOY'
>>> without_protocol("承知しました。\\nDELEGATE: CODE\\nTASK: 直す")
'承知しました。'
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from shared_lib.routing.model import Route

CODERS = ("CODE1", "CODE2", "CODE3")
TARGETS: dict[str, Route] = {
    **{r.value: r for r in Route if r is not Route.CHAT},
    **dict.fromkeys(CODERS, Route.CODE),
}
MAX_TASK = 300
# a protocol line: its keyword at the head of a line (any case, full-width forms folded), a colon
_LINE = re.compile(r"^\s*(DELEGATE|TASK)\s*:(.*)$", re.IGNORECASE)


@dataclass(frozen=True)
class Delegation:
    """A well-formed hand-over: the route, the coder it names (CODE1-3) and the task."""

    route: Route
    task: str
    coder: str | None = None


@dataclass(frozen=True)
class Reading:
    """What a reply says of the protocol: a delegation, or why its block is broken (``error``);
    neither when the reply has no protocol line at all."""

    delegation: Delegation | None = None
    error: str = ""

    @property
    def present(self) -> bool:
        return self.delegation is not None or bool(self.error)


def _lines(text: str) -> list[tuple[str, str]]:
    found = []
    for line in unicodedata.normalize("NFKC", text).splitlines():
        if m := _LINE.match(line):
            found.append((m.group(1).upper(), m.group(2).strip()))
    return found


def read(text: str) -> Reading:
    """The protocol block of ``text`` (see the module docstring)."""
    lines = _lines(text)
    delegates = [v for k, v in lines if k == "DELEGATE"]
    tasks = [v for k, v in lines if k == "TASK"]
    if not delegates:  # a "Task:" line of an ordinary reply is no protocol
        return Reading()
    if len(delegates) != 1:
        return Reading(error="one_delegate_line_expected")
    if len(tasks) != 1 or not tasks[0]:
        return Reading(error="one_task_line_expected")
    target = delegates[0].upper()
    if target not in TARGETS:
        return Reading(error=f"unknown_route: {target[:20]}")
    task = tasks[0][:MAX_TASK]
    return Reading(Delegation(TARGETS[target], task, coder=target if target in CODERS else None))


def without_protocol(text: str) -> str:
    """``text`` without the protocol's lines: what the user may read of a delegating reply (a
    reply without a DELEGATE line is returned as it is)."""
    if not any(k == "DELEGATE" for k, _ in _lines(text)):
        return text
    kept = [line for line in text.splitlines() if not _LINE.match(unicodedata.normalize("NFKC", line))]
    return "\n".join(kept).strip()
