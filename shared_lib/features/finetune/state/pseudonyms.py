"""Pseudonyms for the fine-tuning export: no employee's name leaves in a dataset.

Every person of the organisation's directory (``orgs/{org}/users``) is replaced in the exported
text by a pseudonym of that organisation (「社員A」「社員B」…, ``label``), the same person always
the same one, across exports. What is a person's mention (``Matcher``), compared after NFKC,
lower case and katakana as hiragana, blanks inside a name allowed (「田中 太郎」「ﾀﾅｶ」「Ｔａｎａｋａ」):

* the name and its kana reading whole; the family and given parts (split at a blank, or at the
  place the reading's blank puts it: 「田中太郎」「たなか たろう」 is 田中 + 太郎); the romaji of the
  reading and its parts (``tanaka``, ``satou``/``sato``/``satoh``) as words;
* a part of one character (「林」), or of two kana or letters, only before a title or honorific
  (「林さん」「かず部長」), where it is a name and not a word;
* the user id (``u-tanaka``) as a word, and the ChatWork account id inside a ChatWork tag
  (``[To:123]``, ``[piconname:123]``, ``[rp aid=123``);
* an ``@mention``: the person it names, else a pseudonym of the handle itself (someone outside
  the directory is no less a person).

A form two people share (two 佐藤さん) gets a pseudonym of its own: which of them it was is not
known, and the name is not kept either. The mapping (a key per person, shared form or handle →
pseudonym) is kept sealed with the vault's key at ``orgs/{org}/vaults/ft-pseudonyms``
(``load``/``save``), never in clear: whoever holds a dataset cannot read the names back without
the key.

>>> label(0), label(25), label(26)
('社員A', '社員Z', '社員AA')
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cryptography.fernet import InvalidToken, MultiFernet

from shared_lib import collections
from shared_lib.errors import CharterError
from shared_lib.ports import Store, Transaction
from shared_lib.tools.person_names import TITLES, hiragana, to_romaji

PREFIX = "社員"
MAPPING_ID = "ft-pseudonyms"
DIRECTORY_LIMIT = 10_000
_TITLES = sorted(
    {hiragana(unicodedata.normalize("NFKC", t).strip().lower()) for t in TITLES}, key=len, reverse=True
)
_AFTER = "(?=\\s*(?:" + "|".join(re.escape(t) for t in _TITLES if t) + "))"
_WORD = "a-z0-9_"  # a latin form is a word: 「Tanaka-san」 is one, 「u-tanaka2」 is not
_MENTION = r"(?<![a-z0-9_.])@(?P<handle>[^\s@、。,，.．!！?？「」『』()（）\[\]:：]+)"
_CHATWORK = r"\[(?:to|piconname|picon):(?P<cw>\d+)\]|\[rp aid=(?P<rp>\d+)"


class PseudonymError(CharterError):
    """The sealed mapping cannot be opened or kept (no vault key, a wrong key, a lost race)."""


def label(index: int) -> str:
    """The ``index``-th pseudonym: 社員A … 社員Z, 社員AA …"""
    letters = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        letters = chr(ord("A") + rest) + letters
    return PREFIX + letters


def _norm_char(char: str) -> str:
    return hiragana(unicodedata.normalize("NFKC", char).lower())


def _norm(text: str) -> str:
    return "".join("".join(_norm_char(c) for c in text).split())


@dataclass
class Pseudonyms:
    """The organisation's mapping (key → pseudonym); ``of`` gives a key its pseudonym, a new one next."""

    mapping: dict[str, str] = field(default_factory=dict)
    used: set[str] = field(default_factory=set)

    def of(self, key: str) -> str:
        if key not in self.mapping:
            taken = set(self.mapping.values())
            n = len(self.mapping)
            while label(n) in taken:
                n += 1
            self.mapping[key] = label(n)
        self.used.add(self.mapping[key])
        return self.mapping[key]


def _parts(name: str, reading: str | None) -> list[str]:
    """The family and given parts of a written name (see the module docstring)."""
    words = unicodedata.normalize("NFKC", name).split()
    if len(words) > 1:
        return words
    said = (reading or "").split()
    if len(said) != 2 or len(name) < 2 or not all(len(s) for s in said):
        return []
    k = round(len(name) * len(said[0]) / (len(said[0]) + len(said[1])))
    k = min(max(k, 1), len(name) - 1)
    return [name[:k], name[k:]]


def _romaji(reading: str) -> set[str]:
    r = to_romaji(reading)
    return {r, r.replace("ou", "o").replace("uu", "u").replace("oo", "o"), r.replace("ou", "oh")}


def person_forms(person: Mapping[str, Any]) -> set[str]:
    """The written forms of one person of the directory (normalised, see the module docstring)."""
    name, reading = str(person.get("name") or ""), person.get("reading")
    forms = {name, *_parts(name, reading)}
    if reading:
        forms |= {str(reading), *str(reading).split(), *_romaji(str(reading))}
        forms |= {f for part in str(reading).split() for f in _romaji(part)}
    forms.add(str(person.get("user_id") or ""))
    return {n for f in forms if (n := _norm(f))}


class Matcher:
    """Finds the people of a directory in a text and replaces them with their pseudonyms."""

    def __init__(self, people: Iterable[Mapping[str, Any]]) -> None:
        owners: dict[str, set[str]] = {}
        self.chatwork: dict[str, str] = {}
        whole: set[str] = set()  # full names and readings: replaced wherever they stand
        for person in people:
            key = f"u:{person.get('user_id')}"
            whole |= {_norm(str(person.get("name") or "")), _norm(str(person.get("reading") or ""))}
            for form in person_forms(person):
                owners.setdefault(form, set()).add(key)
            if person.get("chatwork_account_id"):
                self.chatwork[str(person["chatwork_account_id"])] = key
        # a form two people share is a key of its own (module docstring)
        self.forms = {f: (next(iter(k)) if len(k) == 1 else f"n:{f}") for f, k in owners.items()}
        alternatives = [f"(?P<mention>{_MENTION})", f"(?P<tag>{_CHATWORK})"]
        for form in sorted(self.forms, key=len, reverse=True):
            body = "\\s*".join(re.escape(c) for c in form)
            if form.isascii():
                body = f"(?<![{_WORD}\\-]){body}(?![{_WORD}])"
            short = not form.isascii() and (len(form) <= 1 or (len(form) <= 2 and not _is_kanji(form)))
            alternatives.append(body + (_AFTER if short and form not in whole else ""))
        self.pattern = re.compile("|".join(alternatives))

    def replace(self, text: str, names: Pseudonyms) -> str:
        """``text`` with every person's mention replaced by their pseudonym."""
        chars = [(i, n) for i, c in enumerate(text) for n in _norm_char(c)]
        normal = "".join(n for _, n in chars)
        out, last = [], 0
        for m in self.pattern.finditer(normal):
            start, end = chars[m.start()][0], chars[m.end() - 1][0] + 1
            if start < last:
                continue
            out.append(text[last:start])
            out.append(self._pseudonym(m, names, text[start:end]))
            last = end
        return "".join(out) + text[last:]

    def _pseudonym(self, m: re.Match[str], names: Pseudonyms, original: str) -> str:
        if m.group("mention"):
            handle = _norm(m.group("handle"))
            bare = next(
                (handle[: -len(t)] for t in _TITLES if t and handle.endswith(t) and handle != t), handle
            )
            return "@" + names.of(self.forms.get(bare) or self.forms.get(handle) or f"m:{handle}")
        if m.group("tag"):
            account = m.group("cw") or m.group("rp")
            pseudonym = names.of(self.chatwork.get(account) or f"m:cw{account}")
            return re.sub(r"[0-9０-９]+", pseudonym, original, count=1)
        return names.of(self.forms[_norm(m.group(0))])

    def replace_obj(self, value: Any, names: Pseudonyms) -> Any:
        """Every string inside a JSON-like value (keys are the schema's: left as they are)."""
        if isinstance(value, str):
            return self.replace(value, names)
        if isinstance(value, dict):
            return {k: self.replace_obj(v, names) for k, v in value.items()}
        if isinstance(value, list):
            return [self.replace_obj(v, names) for v in value]
        return value


def _is_kanji(text: str) -> bool:
    return all("\u4e00" <= c <= "\u9fff" or c in "々〆" for c in text)


def directory(store: Store, org_id: str) -> list[dict[str, Any]]:
    rows = store.query(collections.collection_path("users", org=org_id), limit=DIRECTORY_LIMIT)
    return [{**doc, "user_id": uid} for uid, doc in rows]


def mapping_path(org_id: str) -> str:
    return collections.path("vaults", org=org_id, id=MAPPING_ID)


def _open(cipher: MultiFernet, doc: Mapping[str, Any] | None) -> dict[str, str]:
    if not doc:
        return {}
    try:
        data = json.loads(cipher.decrypt(str(doc.get("ciphertext", "")).encode()))
    except (InvalidToken, ValueError) as exc:
        raise PseudonymError("the pseudonym mapping cannot be opened with the vault key") from exc
    return {str(k): str(v) for k, v in data.items()}


def load(store: Store, org_id: str, cipher: MultiFernet | None) -> Pseudonyms:
    if cipher is None:
        raise PseudonymError("no vault key (CHARTER_VAULT_KEY) to seal the pseudonym mapping")
    return Pseudonyms(_open(cipher, store.get(mapping_path(org_id))))


def save(
    store: Store, org_id: str, cipher: MultiFernet, before: Mapping[str, str], names: Pseudonyms
) -> None:
    """Seal ``names`` if it grew; ``PseudonymError`` if another export changed it meanwhile."""
    if dict(before) == names.mapping:
        return

    def _write(txn: Transaction) -> None:
        if _open(cipher, txn.get(mapping_path(org_id))) != dict(before):
            raise PseudonymError("the pseudonym mapping changed during the export")
        sealed = cipher.encrypt(json.dumps(names.mapping, ensure_ascii=False).encode()).decode()
        txn.set(mapping_path(org_id), {"ciphertext": sealed, "count": len(names.mapping)})

    store.run_transaction(_write)
