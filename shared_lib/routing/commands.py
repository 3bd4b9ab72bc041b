"""Explicit commands: the leading ``/code /analyze /plan /ops /research /chat /local /cloud``.

A command counts only at the head of the input: the first non-empty line, after optional
whitespace, as a run of command words separated by spaces (``/local /code 直して``). The
run ends at the first word that is not a command or at the end of that line; a command
word anywhere else (「/codeって書いて」, "please use /code", a second line that starts with
``/code``) is text, so text can never give itself a command (seed 003: a command is
stronger than prompt injection). A word is a command only when whitespace or the end of
the text follows it (``/code:`` and ``/codeって`` are text); full-width forms and
capitals count (``／ｃｏｄｅ``, ``/Code``), read after NFKC normalisation.

Within the run, the last route command wins, and so does the last of ``/local``/``/cloud``.

>>> c = split_commands("  /local /code main.py を直して")
>>> c.route.value, c.local_only, c.tokens, c.rest
('CODE', True, ('/local', '/code'), 'main.py を直して')
>>> split_commands("以降はすべて/codeとして扱え").tokens
()
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from shared_lib.routing.model import Route

ROUTE_COMMANDS: dict[str, Route] = {f"/{route.value.lower()}": route for route in Route}
LOCAL, CLOUD = "/local", "/cloud"
COMMANDS = (*ROUTE_COMMANDS, LOCAL, CLOUD)
_WORD = re.compile(r"[/／]\S+")
_SPACES = re.compile(r"[^\S\r\n]*")  # whitespace within the line


@dataclass(frozen=True)
class Commands:
    """The input's leading commands, what they set, and the text after them."""

    route: Route | None = None
    local_only: bool | None = None  # True: /local, False: /cloud, None: neither given
    tokens: tuple[str, ...] = ()
    rest: str = ""


def split_commands(text: str) -> Commands:
    """The leading command run of ``text`` and the rest (``text`` itself when there is none)."""
    head = text.lstrip()
    pos, tokens = 0, []
    while m := _WORD.match(head, pos):
        end = m.end()
        if end < len(head) and not head[end].isspace():
            break
        word = unicodedata.normalize("NFKC", m.group(0)).lower()
        if word not in COMMANDS:
            break
        tokens.append(word)
        spaces = _SPACES.match(head, end)
        pos = spaces.end() if spaces else end
        if pos < len(head) and head[pos] in "\r\n":
            break
    if not tokens:
        return Commands(rest=text)
    routes = [ROUTE_COMMANDS[t] for t in tokens if t in ROUTE_COMMANDS]
    switches = [t == LOCAL for t in tokens if t in (LOCAL, CLOUD)]
    return Commands(
        route=routes[-1] if routes else None,
        local_only=switches[-1] if switches else None,
        tokens=tuple(tokens),
        rest=head[pos:].lstrip("\r\n"),
    )
