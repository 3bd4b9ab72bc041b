"""The facts a summary call lists beside its summary (seed 001 §19.7), in the same answer.

The level-2 summary call (the messages leaving the window) already reads everything the rules
read; its system text asks it to end the summary with one line ``<facts>[…]</facts>``: a JSON
array of ``{"kind": …, "text": …}`` (``fact_merge.Proposed``: the kinds of the rules, a text of
2–300 characters, nothing else). No call is added; the answer is a little longer
(``FACTS_MAX_TOKENS`` more at most).

The block is always taken out of the summary. A block that is not the schema — not JSON, a
kind the rules do not know, a field too many, more than ``MAX_FACTS`` items, cut short by the
token limit — gives no facts at all (``None``): compaction keeps the rules' facts only, never
fewer. The texts are masked like the summary: with a ``vault`` the numbered placeholders the
call read come back as their values (sealed again when kept); a placeholder the call made up
or one without a value stays a stored placeholder (``[PHONE]``), shown as words, never kept as
if it were the value.

>>> split_facts('見積は金曜。\\n<facts>[{"kind": "commitment", "text": "見積は金曜までに送る"}]</facts>')
('見積は金曜。', (Proposed(kind='commitment', text='見積は金曜までに送る'),))
>>> split_facts("見積は金曜。<facts>[{'kind': 'commitment'}]</facts>")
('見積は金曜。', None)
"""

from __future__ import annotations

import re

from pydantic import TypeAdapter, ValidationError

from shared_lib.memory.fact_merge import Proposed
from shared_lib.privacy.sanitizer import PLACEHOLDER, Sanitizer, unmask

MAX_FACTS = 20
FACTS_MAX_TOKENS = 300  # what the facts line may add to the summary call's answer
FACTS_RULES = (
    "- 要約のあとに改行し、長期記憶に残す重要事項を <facts>[...]</facts> の1行で書く（JSON の配列）",
    '- 要素は {"kind": 種類, "text": 会話の言葉のままの短い一文}。種類は decision（決定）・commitment'
    "（約束・期限）・preference（好み・希望）・date（日程）・error_fix（エラーと解決策）・remember"
    "（覚えておいてと言われたこと）のどれか",
    "- 質問・雑談・迷っている案・他人の未決の案・あとで取り消された決定は入れない。なければ <facts>[]</facts>",
)
_BLOCK = re.compile(r"<facts>(.*?)(?:</facts>|$)", re.S)
_SCHEMA: TypeAdapter[list[Proposed]] = TypeAdapter(list[Proposed])


def split_facts(answer: str) -> tuple[str, tuple[Proposed, ...] | None]:
    """The summary without its facts block, and the facts (``None``: no block or not the schema)."""
    found = _BLOCK.search(answer)
    if found is None:
        return answer.strip(), None
    summary = (answer[: found.start()] + answer[found.end() :]).strip()
    try:
        facts = _SCHEMA.validate_json(found.group(1).strip() or "null", strict=True)
    except ValidationError:
        return summary, None
    return summary, (tuple(facts) if len(facts) <= MAX_FACTS else None)


def opened_facts(facts: tuple[Proposed, ...], vault: dict[str, str] | None) -> tuple[Proposed, ...]:
    """The facts' texts as compaction keeps them: masked (stored placeholders), or with ``vault``
    the values back in place of the placeholders the call read; any other placeholder stored."""
    s = Sanitizer.default()
    out = []
    for f in facts:
        text = str(unmask(f.text, vault)) if vault is not None else f.text
        text = PLACEHOLDER.sub(lambda m: f"[{m.group(1)}]", text)  # one with no value behind it
        out.append(f.model_copy(update={"text": text if vault is not None else s.mask_stored(text)}))
    return tuple(out)
