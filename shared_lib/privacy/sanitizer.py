"""Masking of secrets and personal data (rules are data: ``config/sanitizer_rules.json``).

Text is masked before it reaches a cloud LLM or a log (seed 002 §7, seed 003
"セキュリティ"). ``mask`` returns the masked text and a *vault* (placeholder -> original).
The same value always gets the same placeholder within one vault, so the LLM can refer
to it ("[EMAIL_1]"); only the executor may turn placeholders back into values
(``shared_lib.brain.vault.restore_parameters``), nothing else ever sees a vault.

>>> masked, vault = Sanitizer.default().mask("連絡先は taro@example.com です")
>>> masked
'連絡先は [EMAIL_1] です'
>>> vault["[EMAIL_1]"]
'taro@example.com'
>>> Sanitizer.default().mask_text("password: hunter2")
'password: [SECRET_1]'

Rules read a folded copy of the text (``text_fold.fold``: full-width forms as ASCII, every dash
``-``, the ideographic space a space, no zero-width or bidi character inside a value) and a
placeholder replaces the span the value had as typed, so a number typed full-width, dotted or
split is masked like any other and the text around it stays as the user wrote it. A rule's
``check`` validates the digits of what it found (``sanitizer_checks``: Luhn, the length of a
Japanese number); a number glued to an id (``t-cce0312345678``) is never a value.

>>> Sanitizer.default().mask("「０８０－２７１８－２８１８」かhanako＠example.com まで")
('「[PHONE_1]」か[EMAIL_1] まで', {'[EMAIL_1]': 'hanako＠example.com', '[PHONE_1]': '０８０－２７１８－２８１８'})

At rest (seed 002 §7 applied to the store): every store writer keeps ``mask_stored`` text,
whose placeholders carry no number (``[EMAIL]``): a stored text is fed back to a later
turn's LLM, where a numbered placeholder would collide with the numbers of that turn's own
vault. Identifiers (keys ``id``, ``*_id``, ``*_ids``, ``*_by``, ``by``, ``marker``,
``recipients``) are left alone: an id is not personal text, and masking one would break it.

>>> Sanitizer.default().mask_stored({"content": "mail taro@example.com", "user_id": "u-1"})
{'content': 'mail [EMAIL]', 'user_id': 'u-1'}

A reply (``present``) gives back only the recipient's own values and shows every other
placeholder, numbered or not, as words (``wording`` in the rules file); a placeholder of a
label no rule has (an LLM's own ``[NAME_1]``) reads 「（伏せた情報）」: a user never reads
``[PHONE_1]``. The rule of whose value is whose: the only values a reply restores are those
of the message being answered (masked afresh with the same rules, so numbered as the brain
numbered them), because the recipient is the person who wrote it. A value from an earlier
turn, from a store (kept unnumbered, ``[EMAIL]``), from another person or from a tool result
is never restored by a reply, even when a placeholder of the same shape names it — only the
executor restores parameters, from the vault of the turn that asked. ``present`` is called
at one place, the responder, right before the channel send, on every reply whatever
composed it (the LLM's text, a template filled from a tool result, a confirmation).

>>> Sanitizer.default().present("[EMAIL_1] と [PHONE] ですね", own="taro@example.com", language="ja")
'taro@example.com と （電話番号・非表示） ですね'
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator

from shared_lib.ports import Vector
from shared_lib.privacy.sanitizer_checks import CHECKS, Check, candidates
from shared_lib.privacy.text_fold import fold
from shared_lib.settings import config_files

RULES_FILE = Path(__file__).parents[1] / "config" / "sanitizer_rules.json"
PLACEHOLDER = re.compile(r"\[([A-Z][A-Z_]*)_(\d+)\]")
STORED_PLACEHOLDER = re.compile(r"\[([A-Z][A-Z_]*)\]")
SECRET_GROUP = "secret"
IDENTIFIER_KEY = re.compile(r"^(?:id|ids|by|marker|recipients)$|_(?:id|ids|by)$")
_HIDDEN = {"ja": "（非表示）", "en": "(hidden)"}
_WITHHELD = {"ja": "（伏せた情報）", "en": "(withheld)"}
_CLIPPED = re.compile(r"\[([A-Z][A-Z_0-9]*)(?=…|\.\.\.|$)")


class Rule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    label: str
    pattern: str
    check: Literal["luhn", "jp_phone", "intl_phone"] | None = None  # ``sanitizer_checks.CHECKS``

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        re.compile(value)
        return value


class RuleSet(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    version: int
    description: str = ""
    rules: list[Rule]
    wording: dict[str, dict[str, str]] = {}  # label -> language -> what a reply shows instead


# The memo of clean texts (``Sanitizer._clean``): texts up to this long, at most this many
# (about 0.5 MiB at the worst), each looked up once per mask instead of folded and run by every rule.
CLEAN_MEMO_CHARS = 64
CLEAN_MEMO_SIZE = 4096
# Longer clean texts are remembered by a digest (``Sanitizer._clean_long``), the most recently
# seen this many: the Base system prompt (persona and instructions, ~8,000 characters) is in every
# LLM call the call log masks, and the classifier's prompt in every classification; 21 rules over
# the Base cost ~7 ms a call. 16 bytes an entry; a collision would need BLAKE2b's to be broken.
CLEAN_DIGESTS = 256


class Sanitizer:
    def __init__(self, rules: list[Rule], wording: dict[str, dict[str, str]] | None = None) -> None:
        self.rules = rules
        self.wording = wording or {}
        self._compiled = [(r, re.compile(r.pattern), CHECKS[r.check] if r.check else None) for r in rules]
        labels = sorted({r.label for r in rules} | set(self.wording), key=len, reverse=True)
        self._labels = labels
        alternatives = "|".join(re.escape(label) for label in labels) or "(?!)"
        self._any_placeholder = re.compile(rf"\[({alternatives})(?:_\d+)?\]")
        # Short texts in which no rule found anything (``_apply``): the same event names,
        # layers, outcomes and reason codes are masked in every log line and record of a turn.
        # Only a text that held nothing is remembered, so the memo holds no value; a text is
        # clean under these rules or not, whoever asks (the session numbers found values only).
        self._clean: set[str] = set()
        self._clean_long: OrderedDict[bytes, None] = OrderedDict()
        self._long_lock = threading.Lock()

    @classmethod
    def from_file(cls, path: Path | str) -> Sanitizer:
        data = RuleSet.model_validate(json.loads(Path(path).read_text(encoding="utf-8")))
        return cls(data.rules, data.wording)

    @classmethod
    def default(cls) -> Sanitizer:
        """The rules of ``CHARTER_SANITIZER_RULES`` or the packaged file (cached per path)."""
        return _load(str(config_files.current().sanitizer_rules or RULES_FILE))

    def mask(self, text: str, vault: dict[str, str] | None = None) -> tuple[str, dict[str, str]]:
        """Mask ``text``; ``vault`` (extended in place) keeps numbering and values consistent."""
        vault = {} if vault is None else vault
        if not text or text in self._clean:  # nothing to take: no pass, no session
            return text, vault
        return self._apply(text, _Session(vault)), vault

    def _known_clean(self, text: str) -> bytes | None:
        """``None`` when ``text`` is known to hold nothing; otherwise the key to remember it by
        (empty for a short text, which the set holds as it is)."""
        if len(text) <= CLEAN_MEMO_CHARS:
            return None if text in self._clean else b""
        key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        with self._long_lock:
            if key in self._clean_long:
                self._clean_long.move_to_end(key)
                return None
        return key

    def _remember_clean(self, text: str, key: bytes) -> None:
        if not key:
            if len(self._clean) >= CLEAN_MEMO_SIZE:
                self._clean.clear()  # a new start beats bookkeeping: the common texts come back at once
            self._clean.add(text)
            return
        with self._long_lock:
            self._clean_long[key] = None
            while len(self._clean_long) > CLEAN_DIGESTS:
                self._clean_long.popitem(last=False)

    def _apply(self, text: str, session: _Session) -> str:
        """Every rule, in order, over the folded form of ``text`` (``text_fold``); each value
        found replaces its span of ``text`` as typed. A value a rule took is hidden from the
        rules after it behind brackets of its length, as its placeholder once hid it."""
        key = self._known_clean(text)
        if key is None:
            return text
        folded = fold(text)
        work = folded.text
        taken: list[tuple[int, int, str]] = []  # source span -> its replacement
        for rule, rx, check in self._compiled:
            found = list(_values(rx, work, check))
            for start, end in found:
                a, b = folded.source_span(start, end)
                if not any(a < y and x < b for x, y, _ in taken):
                    taken.append((a, b, session.placeholder(text[a:b], rule.label)))
            work = _hidden(work, found)
        if not taken:
            self._remember_clean(text, key)
        for a, b, replacement in sorted(taken, reverse=True):
            text = text[:a] + replacement + text[b:]
        return text

    def mask_text(self, text: str) -> str:
        return self.mask(text)[0]

    def mask_obj(
        self, value: Any, vault: dict[str, str] | None = None, *, keep_identifiers: bool = False
    ) -> Any:
        """Mask every string inside a JSON-like structure with one shared vault (with
        ``keep_identifiers``, not those under identifier keys: see ``IDENTIFIER_KEY``)."""
        vault = {} if vault is None else vault
        if isinstance(value, str):
            return self.mask(value, vault)[0]
        if isinstance(value, dict):
            return {
                k: v
                if keep_identifiers and isinstance(k, str) and IDENTIFIER_KEY.search(k)
                else self.mask_obj(v, vault, keep_identifiers=keep_identifiers)
                for k, v in value.items()
            }
        if isinstance(value, list | tuple):
            return [self.mask_obj(v, vault, keep_identifiers=keep_identifiers) for v in value]
        return value

    def contains_secret(self, text: str) -> bool:
        return self.mask_text(text) != text

    def mask_stored(self, value: Any) -> Any:
        """``value`` as a store keeps it: every string masked with unnumbered placeholders,
        except under identifier keys (``IDENTIFIER_KEY``). Idempotent."""
        if isinstance(value, str):
            return self._apply(value, _Session({}, numbered=False))
        if isinstance(value, dict):
            return {
                k: v if isinstance(k, str) and IDENTIFIER_KEY.search(k) else self.mask_stored(v)
                for k, v in value.items()
            }
        if isinstance(value, Vector):  # an embedding: floats, and it must stay a vector value
            return value
        if isinstance(value, list | tuple):
            return [self.mask_stored(v) for v in value]
        return value

    def present(self, text: str, *, own: str, language: str = "ja") -> str:
        """A reply as the recipient may read it: the placeholders of ``own`` (the message being
        answered, masked afresh: the numbering the brain used) restored, every other one in words."""
        restored = unmask(text, self.mask(own)[1])
        shown = self._any_placeholder.sub(lambda m: self.words(m.group(1), language), restored)
        unknown = PLACEHOLDER.sub(lambda m: _WITHHELD.get(language, _WITHHELD["ja"]), shown)
        return _CLIPPED.sub(lambda m: self._clipped(m, language), unknown)

    def _clipped(self, m: re.Match[str], language: str) -> str:
        """A placeholder cut short by a length limit (``[PHONE_…``), in words when it is one."""
        stem = re.sub(r"_\d*$", "", m.group(1))
        labels = [label for label in self._labels if len(stem) > 1 and label.startswith(stem)]
        return self.words(labels[0], language) if labels else m.group(0)

    def words(self, label: str, language: str = "ja") -> str:
        """What a reply shows for a value it does not give back."""
        shown = self.wording.get(label) or _HIDDEN
        return shown.get(language) or shown.get("ja") or next(iter(shown.values()))


class _Session:
    """One masking pass: reuses placeholders for values already in the vault."""

    def __init__(self, vault: dict[str, str], *, numbered: bool = True) -> None:
        self.vault = vault
        self.numbered = numbered
        self.reverse = {v: k for k, v in vault.items()}
        self.counters: dict[str, int] = {}
        for key in vault:
            m = PLACEHOLDER.fullmatch(key)
            if m:
                self.counters[m.group(1)] = max(self.counters.get(m.group(1), 0), int(m.group(2)))

    def placeholder(self, original: str, label: str) -> str:
        if PLACEHOLDER.fullmatch(original) or STORED_PLACEHOLDER.fullmatch(original):
            return original
        if not self.numbered:
            return f"[{label}]"
        if original in self.reverse:
            return self.reverse[original]
        self.counters[label] = self.counters.get(label, 0) + 1
        placeholder = f"[{label}_{self.counters[label]}]"
        self.vault[placeholder] = original
        self.reverse[original] = placeholder
        return placeholder


def _values(rx: re.Pattern[str], work: str, check: Check | None) -> Iterator[tuple[int, int]]:
    """The spans of ``work`` a rule masks: a match (its ``secret`` group when it has one),
    or with a check, the best part of the match that passes it (``sanitizer_checks``)."""
    pos = 0
    while (m := rx.search(work, pos)) is not None:
        secret = SECRET_GROUP in rx.groupindex and m.group(SECRET_GROUP) is not None
        span = m.span(SECRET_GROUP) if secret else m.span()
        pos = max(m.end(), pos + 1)
        if span[0] == span[1]:
            continue
        if check is None:
            yield span
            continue
        best = next(candidates(work, span, check), None)
        if best is not None:
            yield best
            pos = best[1]


def _hidden(work: str, spans: list[tuple[int, int]]) -> str:
    """``work`` with each span behind brackets of its length: no later rule reads into it."""
    for start, end in spans:
        inner = "\ufffc" * max(0, end - start - 2)
        work = work[:start] + ("[" + inner + "]")[: end - start] + work[end:]
    return work


@lru_cache(maxsize=4)
def _load(path: str) -> Sanitizer:
    return Sanitizer.from_file(path)


def unmask(value: Any, vault: dict[str, str]) -> Any:
    """Replace placeholders found in ``vault`` (one pass; unknown placeholders stay masked)."""
    if isinstance(value, str):
        return PLACEHOLDER.sub(lambda m: vault.get(m.group(0), m.group(0)), value)
    if isinstance(value, dict):
        return {k: unmask(v, vault) for k, v in value.items()}
    if isinstance(value, list):
        return [unmask(v, vault) for v in value]
    return value
