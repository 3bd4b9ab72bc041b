"""Subscription filters: the part of Pub/Sub's filter language the topology uses, evaluated on a
message's attributes.

Pub/Sub drops a message a subscription's filter does not match before any push (it is
acknowledged for that subscription and never billed as a delivery); ``topology.json`` names
a filter per subscription, Terraform gives it to the cloud's subscription, and the embedded
bus (``adapters.inproc_bus``) applies it the same way through ``compile_filter``. The Pub/Sub
emulator accepts a filter and ignores it, so every filtered target still answers such a
message itself, from its attributes and before decoding anything (``Layer.declines``, the
observer's own record).

The grammar, a subset of Pub/Sub's with the same meaning:

    expr := term ("AND" term)* | term ("OR" term)*     (AND and OR mix only in parentheses)
    term := "NOT" term | "-" term | "(" expr ")"
          | attributes.KEY = "VALUE"                   (the key is present with this value)
          | attributes:KEY                             (the key is present)
          | hasPrefix(attributes.KEY, "PREFIX")        (present and starts with the prefix)

``!=`` is refused: whether Pub/Sub matches a message without the key there is easy to get wrong,
so a filter says ``NOT attributes.KEY = "VALUE"``, which matches a message without the key. So is
a filter over Pub/Sub's 256 bytes, which the cloud would refuse when Terraform creates it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from shared_lib.errors import ConfigError

Predicate = Callable[[Mapping[str, str]], bool]
MAX_BYTES = 256  # Pub/Sub's limit on a subscription's filter

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<string>"(?:[^"\\]|\\.)*")
      | (?P<attr>attributes(?:\.|:)[A-Za-z_][A-Za-z0-9_-]*)
      | (?P<word>NOT|AND|OR|hasPrefix)\b
      | (?P<op>!=|=|\(|\)|,|-)
    )""",
    re.VERBOSE,
)


class FilterError(ConfigError, ValueError):
    """A filter outside the supported grammar (a ``ValueError`` too: a topology that holds one is
    refused like any other inconsistent topology)."""


def _tokens(text: str) -> list[str]:
    out, pos = [], 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise FilterError(f"filter {text!r}: cannot read from {text[pos:]!r}")
        out.append(m.group(m.lastgroup or 0))
        pos = m.end()
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tokens(text)
        self.i = 0

    def fail(self, why: str) -> FilterError:
        return FilterError(f"filter {self.text!r}: {why}")

    def peek(self) -> str | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, expected: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (expected is not None and tok != expected):
            raise self.fail(f"expected {expected or 'more'}, found {tok!r}")
        self.i += 1
        return tok

    def parse(self) -> Predicate:
        pred = self.expr()
        if self.peek() is not None:
            raise self.fail(f"unexpected {self.peek()!r}")
        return pred

    def expr(self) -> Predicate:
        terms, joiner = [self.term()], None
        while self.peek() in ("AND", "OR"):
            word = self.take()
            if joiner not in (None, word):
                raise self.fail("AND and OR mix only inside parentheses")
            joiner = word
            terms.append(self.term())
        if len(terms) == 1:
            return terms[0]
        if joiner == "AND":
            return lambda a: all(t(a) for t in terms)
        return lambda a: any(t(a) for t in terms)

    def term(self) -> Predicate:
        tok = self.take()
        if tok in ("NOT", "-"):
            inner = self.term()
            return lambda a: not inner(a)
        if tok == "(":
            inner = self.expr()
            self.take(")")
            return inner
        if tok == "hasPrefix":
            self.take("(")
            key = self.key(self.take(), "hasPrefix")
            self.take(",")
            prefix = self.string()
            self.take(")")
            return lambda a: key in a and a[key].startswith(prefix)
        if tok.startswith("attributes:"):
            key = tok.removeprefix("attributes:")
            return lambda a: key in a
        if tok.startswith("attributes."):
            key = tok.removeprefix("attributes.")
            op = self.take()
            if op == "!=":
                raise self.fail(f'use NOT attributes.{key} = "…" instead of !=')
            if op != "=":
                raise self.fail(f"expected = after attributes.{key}, found {op!r}")
            value = self.string()
            return lambda a: a.get(key) == value
        raise self.fail(f"unexpected {tok!r}")

    def key(self, tok: str, where: str) -> str:
        if not tok.startswith("attributes."):
            raise self.fail(f"{where} takes attributes.KEY, found {tok!r}")
        return tok.removeprefix("attributes.")

    def string(self) -> str:
        tok = self.take()
        if not tok.startswith('"'):
            raise self.fail(f"expected a quoted value, found {tok!r}")
        return re.sub(r"\\(.)", r"\1", tok[1:-1])


def compile_filter(text: str) -> Predicate | None:
    """The predicate of ``text`` on a message's attributes; ``None`` for no filter (every message)."""
    if not text.strip():
        return None
    if len(text.encode()) > MAX_BYTES:
        raise FilterError(f"filter {text[:40]!r}…: {len(text.encode())} bytes, Pub/Sub takes {MAX_BYTES}")
    return _Parser(text).parse()
