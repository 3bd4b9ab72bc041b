"""What a rule's ``check`` asks of a value its pattern found (``config/sanitizer_rules.json``).

A pattern says what a value looks like; a check says whether its digits are one: a card
number passes the Luhn check, a Japanese phone number has the length its prefix gives (070,
080, 090, 050 and 020 numbers eleven digits, 0800 eleven, every other number ten with no 0
after its first digit), an international one 7 to 15 digits. A check that ``trims`` may keep
a part of the match made of whole digit groups (a card number followed by its expiry month,
``4111 1111 1111 1111 12/28``): the longest part that passes, the earliest of equals.

>>> luhn("4111111111111111"), luhn("4111111111111112")
(True, False)
>>> jp_phone("09012345678"), jp_phone("0901234567"), jp_phone("0312345678")
(True, False, True)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

_DIGIT_GROUP = re.compile(r"\d+")
_MOBILE = ("020", "050", "070", "080", "090", "0800")


def luhn(digits: str) -> bool:
    """A card number: 13 to 19 digits whose Luhn sum ends in 0."""
    if not 13 <= len(digits) <= 19:
        return False
    total = 0
    for i, char in enumerate(reversed(digits)):
        n = int(char) * (2 if i % 2 else 1)
        total += n - 9 if n > 9 else n
    return total % 10 == 0


def jp_phone(digits: str) -> bool:
    """A Japanese number: mobile, IP, M2M and 0800 eleven digits, any other ten."""
    if len(digits) == 11:
        return digits.startswith(_MOBILE)
    return len(digits) == 10 and digits[0] == "0" and "0" not in digits[1:3]


def intl_phone(digits: str) -> bool:
    """An E.164 number, country code included: at most 15 digits."""
    return 7 <= len(digits) <= 15


@dataclass(frozen=True)
class Check:
    valid: Callable[[str], bool]
    trims: bool = False


CHECKS = {"luhn": Check(luhn, trims=True), "jp_phone": Check(jp_phone), "intl_phone": Check(intl_phone)}


def candidates(text: str, span: tuple[int, int], check: Check) -> Iterator[tuple[int, int]]:
    """The parts of ``text[span]`` whose digits pass ``check``, best first."""
    start, end = span
    if not check.trims:
        if check.valid("".join(_DIGIT_GROUP.findall(text, start, end))):
            yield span
        return
    groups = [(m.start(), m.end()) for m in _DIGIT_GROUP.finditer(text, start, end)]
    parts = [
        (sum(g[1] - g[0] for g in groups[i : j + 1]), groups[i][0], groups[j][1])
        for i in range(len(groups))
        for j in range(i, len(groups))
    ]
    for _, a, b in sorted(parts, key=lambda p: (-p[0], p[1])):
        if check.valid("".join(_DIGIT_GROUP.findall(text, a, b))):
            yield a, b
