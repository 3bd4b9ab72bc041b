"""People as users name them: titles and honorifics off, readings in kana or romaji.

A user writes 「営業部の山田部長」「山田さん（経理）」「たなか」「ﾀﾅｶ」「Tanaka-san」; the directory
holds 「山田次郎」 with the reading 「やまだ じろう」. ``parse`` splits what was said into the
name and the hints around it (a department before 「の」, words in brackets), with every title
and honorific taken off the end; ``keys`` gives the comparison forms of a name or a reading
(NFKC, no blanks, katakana as hiragana, and the romaji of a kana reading), so ``matches``
compares like with like.

>>> parse("営業部の山田部長さん")
Named(name='山田', hints=('営業部',))
>>> parse("山田さん（経理）")
Named(name='山田', hints=('経理',))
>>> romaji_key("Satou") == romaji_key("Sato") == romaji_key(to_romaji("さとう"))
True
"""

from __future__ import annotations

import re
import unicodedata
from typing import NamedTuple

# Longest first, so 「部長代理」 goes before 「部長」 and 「副社長」 before 「社長」.
TITLES = tuple(
    sorted(
        (
            "部長代理",
            "課長代理",
            "部長補佐",
            "課長補佐",
            "副部長",
            "副課長",
            "副本部長",
            "副支店長",
            "副所長",
            "副院長",
            "社長代理",
            "執行役員",
            "相談役",
            "監査役",
            "顧問",
            "参事",
            "主査",
            "主幹",
            "理事長",
            "理事",
            "局長",
            "部門長",
            "班長",
            "グループ長",
            "グループリーダー",
            "チームリーダー",
            "支社長",
            "院長",
            "代表",
            "gm",
            "gl",
            "pm",
            "pl",
            "mgr",
            "ceo",
            "cto",
            "cfo",
            "coo",
            "部長",
            "課長",
            "係長",
            "主任",
            "副社長",
            "社長",
            "会長",
            "専務",
            "常務",
            "取締役",
            "次長",
            "室長",
            "支店長",
            "店長",
            "所長",
            "工場長",
            "本部長",
            "マネージャー",
            "マネジャー",
            "リーダー",
            "チーフ",
            "先生",
            "先輩",
            "さん",
            "サン",
            "さま",
            "様",
            "くん",
            "君",
            "ちゃん",
            "氏",
            "殿",
            "どの",
            "-san",
            "-sama",
            "-kun",
            "-chan",
            " san",
            " sama",
            " kun",
            " chan",
        ),
        key=len,
        reverse=True,
    )
)
_BRACKETS = re.compile(r"[（(【\[]([^）)】\]]*)[）)】\]]")
# 「営業部の山田」「経理の田中」: a short qualifier before the last 「の」 is a hint, not the name.
_QUALIFIED = re.compile(r"^(?P<hint>.{1,15})の(?P<name>[^の]+)$")


class Named(NamedTuple):
    name: str
    hints: tuple[str, ...]


def normalise(text: str) -> str:
    """NFKC (half-width kana and full-width letters become the usual ones), blanks collapsed."""
    return " ".join(unicodedata.normalize("NFKC", text).split())


# what a name may carry around it: 「@田中」 (a mention), 「田中さんへ」「田中部長宛て」 (the addressee)
_MENTION = re.compile(r"^[@＠]\s?")
_ADDRESSED = ("宛て", "宛", "あて", "へ")


def strip_titles(text: str) -> str:
    """Every title and honorific off the end (「山田部長さん」 is 「山田」), never the whole name;
    a mention's 「@」 and an addressee's 「へ」「宛て」 off too."""
    text = _MENTION.sub("", text.strip())
    for mark in _ADDRESSED:
        if text.endswith(mark) and len(text) > len(mark) + 1:
            text = text[: -len(mark)].rstrip()
            break
    changed = True
    while changed:
        changed = False
        lowered = text.lower()
        for title in TITLES:
            if lowered.endswith(title) and len(text) > len(title):
                text = text[: -len(title)].rstrip(" ・-")
                changed = True
                break
    return text


def parse(said: str) -> Named:
    text = normalise(said)
    hints = [h.strip() for h in _BRACKETS.findall(text) if h.strip()]
    text = _BRACKETS.sub(" ", text).strip()
    qualified = _QUALIFIED.match(text)
    if qualified:
        hints.insert(0, qualified.group("hint").strip())
        text = qualified.group("name")
    return Named(strip_titles(text), tuple(strip_titles(h) for h in hints))


def hiragana(text: str) -> str:
    return "".join(chr(ord(c) - 0x60) if "ァ" <= c <= "ヶ" else c for c in text)


def kana_key(text: str) -> str:
    """Comparison form of a written name or a kana reading: no blanks, katakana as hiragana."""
    return hiragana("".join(normalise(text).split()).lower())


# -- romaji ----------------------------------------------------------------------------------
_YOON = {
    "きゃ": "kya", "きゅ": "kyu", "きょ": "kyo", "しゃ": "sha", "しゅ": "shu", "しょ": "sho",
    "ちゃ": "cha", "ちゅ": "chu", "ちょ": "cho", "にゃ": "nya", "にゅ": "nyu", "にょ": "nyo",
    "ひゃ": "hya", "ひゅ": "hyu", "ひょ": "hyo", "みゃ": "mya", "みゅ": "myu", "みょ": "myo",
    "りゃ": "rya", "りゅ": "ryu", "りょ": "ryo", "ぎゃ": "gya", "ぎゅ": "gyu", "ぎょ": "gyo",
    "じゃ": "ja", "じゅ": "ju", "じょ": "jo", "びゃ": "bya", "びゅ": "byu", "びょ": "byo",
    "ぴゃ": "pya", "ぴゅ": "pyu", "ぴょ": "pyo",
}  # fmt: skip
_KANA = dict(
    zip(
        "あいうえおかきくけこさしすせそたちつてとなにぬねのはひふへほまみむめもやゆよらりるれろわをん"
        "がぎぐげござじずぜぞだぢづでどばびぶべぼぱぴぷぺぽぁぃぅぇぉゃゅょゎ",
        [
            "a",
            "i",
            "u",
            "e",
            "o",
            "ka",
            "ki",
            "ku",
            "ke",
            "ko",
            "sa",
            "shi",
            "su",
            "se",
            "so",
            "ta",
            "chi",
            "tsu",
            "te",
            "to",
            "na",
            "ni",
            "nu",
            "ne",
            "no",
            "ha",
            "hi",
            "fu",
            "he",
            "ho",
            "ma",
            "mi",
            "mu",
            "me",
            "mo",
            "ya",
            "yu",
            "yo",
            "ra",
            "ri",
            "ru",
            "re",
            "ro",
            "wa",
            "o",
            "n",
            "ga",
            "gi",
            "gu",
            "ge",
            "go",
            "za",
            "ji",
            "zu",
            "ze",
            "zo",
            "da",
            "ji",
            "zu",
            "de",
            "do",
            "ba",
            "bi",
            "bu",
            "be",
            "bo",
            "pa",
            "pi",
            "pu",
            "pe",
            "po",
            "a",
            "i",
            "u",
            "e",
            "o",
            "ya",
            "yu",
            "yo",
            "wa",
        ],
        strict=True,
    )
)


def to_romaji(reading: str) -> str:
    """Hepburn romaji of a kana reading (「さとう」 is ``satou``; the long vowel stays spelt)."""
    text, out, i = kana_key(reading), [], 0
    while i < len(text):
        pair = text[i : i + 2]
        if pair in _YOON:
            out.append(_YOON[pair])
            i += 2
            continue
        char = text[i]
        if char == "っ" and i + 1 < len(text):
            nxt = _YOON.get(text[i + 1 : i + 3]) or _KANA.get(text[i + 1], "")
            out.append("t" if nxt.startswith("ch") else nxt[:1])
        elif char == "ー":
            out.append(out[-1][-1:] if out else "")
        else:
            out.append(_KANA.get(char, char))
        i += 1
    return "".join(out)


_SPELLINGS = (
    ("ō", "o"), ("ô", "o"), ("ū", "u"), ("û", "u"), ("tch", "tt"), ("sh", "sy"), ("ch", "ty"),
    ("ts", "t"), ("j", "zy"), ("fu", "hu"), ("oh", "o"), ("ou", "o"), ("oo", "o"), ("uu", "u"),
    ("mb", "nb"), ("mm", "nm"), ("mp", "np"), ("n'", "n"), ("-", ""),
)  # fmt: skip


def romaji_key(text: str) -> str:
    """One spelling for the ways a reading is written in latin letters, case-insensitive:
    Hepburn or Kunrei (``shi``/``si``), long vowels as ``ou``/``oo``/``oh``/``o``/``ō``."""
    key, before = "".join(unicodedata.normalize("NFKC", text).lower().split()), ""
    while key != before:  # 「kouhei」 becomes 「kohei」, then like 「kohei」 itself
        before = key
        for old, new in _SPELLINGS:
            key = key.replace(old, new)
    return key


def is_latin(text: str) -> bool:
    return bool(text) and all(c.isascii() for c in text)


def matches(said: str, name: str, reading: str | None, *, exact: bool) -> bool:
    """Does ``said`` (already without titles) name this person, whole or in part (a surname)?"""
    if is_latin(said):
        # 「Hanako Sato」: a given name first, as in English, is the same person as 「Sato Hanako」
        spoken = [said, " ".join(reversed(said.split()))] if len(said.split()) == 2 else [said]
        wanted = [romaji_key(s) for s in spoken]
        forms = [romaji_key(to_romaji(reading))] if reading else []
        forms.append(romaji_key(name))
    else:
        wanted = [kana_key(said)]
        forms = [kana_key(name), *([kana_key(reading)] if reading else [])]
    if not wanted[0]:
        return False
    return any(f == w if exact else w in f for f in forms for w in wanted)
