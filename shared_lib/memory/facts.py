"""The important facts of messages leaving a conversation's window (seed 001 §19.7), by fixed rules.

Compaction keeps in long-term memory what its summaries may lose. The rules read each message
sentence by sentence (masked, as the history stores it) and keep a sentence that says:

==============  ==============================================================================
kind            what it looks like
==============  ==============================================================================
``remember``    an explicit 「覚えておいて」「これ重要」「忘れないで」 (the seed's first priority)
``decision``    a choice made: 決定・決まり・確定・方針・採用・合意・見送り・保留で, 「〜にする/します/しよう」,
                「〜ことになった」, 「〜ってことで」, 「〜で行こう」, 「〜でお願いします」, 「〜に一本化」
                「〜方向で」「FIXで」「稟議通りました」, an approval (「それで進めといて」), a standing rule
                (「毎朝9時に日報出してください」) (dialect 「〜にしよか」「〜で決まりや」, kana 「けってい」 too)
``commitment``  a promise or a deadline: 約束・期限・締切・納期・厳守, 「〜までに」, an action taken on
                (「やっときます」「送ります」「出すわ」「お送りします」), an action bound to soon
                (「朝イチで…ます」「後ほど…ます」), a day the writer holds to (「週明けになります」)
``preference``  a liking or a wish: 好き・苦手・好み・希望, 「〜してほしい」「〜がいい」「〜はやめて」,
                what would help (「午前中がありがたい」「〜だとうれしい」「〜のが助かる」「控えてもらえると」),
                a request (「メールだけにしてもらえますか」: asked, but not a question)
``date``        a date or time the reader (``shared_lib.dates``) reads, beside a word of the office
                calendar (会議・定例・面談・出張・休み・リリース …), a clock time or a written date;
                a short answer to 「締切いつだっけ？」 keeps the question with it
``error_fix``   an error and its fix or cause (「VPN繋がらん→再起動で直った」「送れなかったのは
                添付が25MB超えてたからでした」); a fix alone
                (「再起動したらいけた！」) keeps the message before it that said the trouble
``tool_result`` the assistant reporting what it did (「登録したウル」「送信しました」)
==============  ==============================================================================

A question (「水曜にする？」「締切いつだっけ」) decides nothing and is not kept, except a
「覚えておいて」; nor is what is not settled (「〜にしようかな…どうしよ」「もし〜たら」「まだ決まって
ない」) or another person's idea in quotes (部長が「〜したら？」って言ってた). A 「重要！」 or
「覚えておいてね。」 on its own keeps the rest of its message, or the person's next message when
it is all they wrote (the message before when it points back: 「↑これ覚えといて」). A short
decision or promise that points back or names nothing (「それで決定で！」「ほな明日までにやっとくわ」)
keeps the message before it, which says what it is about. A later decision that says it
changes something (「やっぱ」「変更」「なしで」「取り消し」) and shares a subject word (「納品」
「搬入」) with an earlier decision, day or promise supersedes it: the later one wins. A date is kept as said and as the day it meant when it was said
(「木曜の15時」 said on 11月25日（火） is 「11月27日（木）15時」), so the fact still means it after
the conversation moved on.

>>> from datetime import datetime, timezone
>>> at = datetime(2025, 11, 25, 1, 0, tzinfo=timezone.utc)
>>> said = ["打ち合わせは木曜の15時からにしましょう", "今日は暑いね〜", "会議は水曜にする？"]
>>> [(f.kinds, f.text) for f in extract([{"role": "user", "text": t, "at": at} for t in said])]
[(('decision', 'date'), '打ち合わせは木曜の15時からにしましょう［木曜の15時＝11月27日（木）15時］')]
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from shared_lib.dates import Reading, display_reading, read

REMEMBER = re.compile(
    r"覚えて(?:おいて|おいてね|おいてください|といて|て)|覚えと(?:いて|け)|これ(?:は)?(?:重要|大事)|重要なので"
    r"|大事なこと|^[【\[(（]?(?:重要|要注意|大事)[】\])）]?[:：!！、]|忘れないで|忘れんといて|忘れんとって"
    r"|記憶しておいて|メモしておいて|メモっといて|メモっておいて|メモしといて|備忘|忘れないように|忘れんように"
    r"|念のため(?:共有|メモ|お伝え)"
)
DECISION = re.compile(
    r"決定|決まり|決まった|決まりました|決めた|決めました|決めよう|確定|合意|方針|採用|正式に|けってい|きまり"
    r"|(?:こと|事)に(?:する|した|します|しました|なった|なりました|なりまし|しよう)"
    r"|(?:って|という|っていう)(?:こと|事)で[。！!〜~ー\s]*$"
    r"|に(?:します|しました|しよう|しよ[かっう]|しましょ|するわ|するね|するよ|する[。！!]|決め)"
    r"|で(?:いき|行き)(?:ます|ましょ)|で(?:いこ|行こ)[うか]?|で進め(?:ます|ましょ|よう)"
    r"|で(?:お願いします|おねがいします|お願い[。！!]|よろしく|OK|ok|Ok|オッケー|ええよ|いいよ)"
    r"|に変更|へ変更|に切り替え|へ切り替え|を廃止|をやめる|やめます|見送り|見送る|見合わせ"
    r"|に(?:一本化|統一|移行|集約)(?:し|する|します|しよう|で|な)"
    r"|(?:は|も)(?:パス|なし|無し|中止|延期|保留)(?:で|に|と)"
    r"|で(?:大丈夫|問題ない|問題ありません|頼む|頼みます|たのむ|了解|承知|おk|おけ)|進めてください|進めてok|進めていい"
    r"|(?:fix|FIX|Fix|フィックス)(?:で|しました|です|!|！|$)|承認|ゴーサイン|GOサイン|goサイン|稟議(?:が|も|は)?通"
    r"|(?:中止|キャンセル|取りやめ|とりやめ|白紙|延期)(?:で|に|と|します|しました|です)"
    r"|(?:やっぱ|やはり).{0,20}(?:なし|無し|やめ|中止|キャンセル)"
    r"|方向性?で(?:お願い|いき|行き|進め|[。！!〜~]|$)|(?:せ|[一-龯]{2})しましょう"
    r"|進め(?:といて|ておいて|てok|てOK|ていい)|毎(?:朝|日|週|月|回).{0,20}(?:ください|こと[。！!]?$|でお願い)"
)
# a promise: a deadline word, or an action the writer takes on (「〜しときます」「送ります」「出すわ」)
COMMITMENT = re.compile(
    r"約束|期限|締切|締め切り|〆|しめきり|締め(?:で|は|日)|納期|厳守|までに|までには|までにお願い"
    r"|やっておきます|やっときます|やります|対応します|担当します|送ります|提出します|出します"
    r"|お任せください|任せて|引き受け|必ず"
    r"|(?:ておき|とき)ま(?:す|ーす)|(?:ておく|とく)(?:わ|ね|よ|[。！!〜~ー]|$)"
    r"|(?:共有|送付|提出|連絡|報告|確認|作成|対応|準備|手配|予約|修正|調整|用意|返信|展開)(?:します|するわ|するね)"
    r"|(?:送り|出し|上げ|まとめ|作り|書き|入れ|戻し|返し|投げ|伺い|持って行き|持っていき)ます"
    r"|(?:出す|送る|やる|書く|上げる|まとめる|持ってく|行く)わ"
    r"|(?!失礼|感謝|期待|安心|納得|心配|勉強|失敗)[一-龯]{2}(?:します|しときます|しておきます)(?:ね|よ|ー|〜)?[^\w]*$"
    r"|(?:送付|提出|連絡|確認|対応|準備|手配|共有|報告|用意|修正|調整|返信|作成)(?:いた|致)します"
    r"|(?:朝イチ|朝一|午後イチ|午後一|今日中|本日中|明日中|週内|今週中|来週中|月内|後ほど|のちほど|あとで|後で"
    r"|至急|すぐ|今から|いまから|年内|今月中|年度内|今期中|週末まで).{0,40}(?:ます|[るすくう]わ)(?:ね|よ)?[ー〜~]*[^\w]*$"
    r"|お(?:送り|渡し|届け|返し|持ち|伝え|知らせ|出し|返事|電話|伺い)(?:します|しま[ーす])"
)
# a wish: said outright, or as what would help (「〜だとうれしい」「〜のが助かる」, not 「ありがと〜助かるわ」)
PREFERENCE = re.compile(
    r"好き|嫌い|苦手|好み|希望|て(?:ほしい|欲しい|ほし|もらえると|もらえたら|いただけると|いただけたら)"
    r"|ほしい|欲しい|がいい|が良い|がええ|がいいな|ほうがいい|方がいい|のがいい"
    r"|(?:と|ば|たら|ほうが|方が|のが|が|なら)(?:助か|ありがた|うれし|嬉し)"
    r"|はやめて|はやめてほしい|しないで(?:ほしい|ください|な)|避けて|控えて|お願いしたい|がベター"
    r"|て(?:もらえ|いただけ|くれ)(?:ます|ません)?か|て(?:もらえる|くれる)[?？]|派です|派なんです|派やねん|たくない(?:です|ん)|勘弁"
    r"|(?:だと|と)困|(?:てみ|やり|し)たいです"
)
OFFICE_WORDS = re.compile(
    r"会議|打ち合わせ|打合せ|ミーティング|MTG|mtg|〆|面談|面接|出張|休み|休暇|有給|リリース|納品|提出"
    r"|訪問|来社|説明会|研修|締切|締め切り|〆切|期限|納期|発表|イベント|飲み会|懇親会|公開|開始|から"
    r"|定例|総会|キックオフ|棚卸|健診|健康診断|不在|外出|在宅|直行|直帰|往訪|監査|点検|工事|停電|メンテ|移転|入社|退職|異動|開催|実施|セミナー|勉強会|朝礼|決算|締め|会[がはをにで]"
)
DONE = re.compile(
    r"(?:登録|作成|送信|追加|更新|変更|削除|完了|予約|保存|設定|記録|共有|投稿|依頼)(?:した|しました|済み|しておいた)"
)
# an error and how it went away (seed 001 §19.7 エラーと解決策): a trouble, then a fix or its cause
TROUBLE = re.compile(
    r"繋がら|つながら|エラー|error|落ち(?:る|た|て|まく)|できない|できん|出来ない|動かない|動かん|固ま|詰ま[っり]"
    r"|不具合|障害|バグ|切れ|こない|来ない|届かない|出ない|開かない|表示されない|重い|遅い|失敗"
    r"|[れえけきせ]なかった|られない|[れえけ]ない(?:件|問題|の|って|→|[、,])|重すぎ|遅すぎ"
    r"|(?:反応|認識|起動|接続|同期|印刷|表示|動作|保存|送信|受信)(?:しない|しなく|せず|できない|されない)"
)
FIXED = re.compile(
    r"直っ|なおっ|直り|なおり|治っ|解決|復旧|解消|いけました|いけた|入れた|できた|できました|通った|戻った"
    r"|原因|のせい|せいでした|からでした|ためでした|回避|対処|で直|したら(?:ok|OK|大丈夫)|安定|改善|[治収]まっ|おさまっ"
    r"|たら.{0,15}(?:した|ました|なった|なりました|た)[^\w]*$"
)
QUESTION_END = re.compile(r"(?:[?？]|かな|かね|っけ|ですか|ますか|ますかね|か)[\s。・…〜~ー!！w笑]*$")
# 「いこか」「しよか」「やろか」「しましょうか」: a proposal taken up (Kansai and standard), not a question
VOLITIONAL_END = re.compile(r"(?:[こよろ]っ?|しょう?|ましょう?)か[\s。・…〜~ー!！w笑]*$")
# not settled: wavering, a hypothetical, 「まだ決まってない」 (a fact only when 「覚えておいて」)
UNSETTLED = re.compile(
    r"かな(?:[あぁー〜~…、。,\s!！?？]|$)|どうしよ|どないしよ|迷う|迷って|迷い中|悩む|悩んで|悩み中|かもしれ|かもね"
    r"|かも[。…\s]*$|もし.{0,30}(?:たら|れば)|たら(?:どう|いい)|未定|決まってな|決まっていな|決まってませ"
    r"|決めてな|決めていな|検討中|考え中|案として|とか(?:どう|いい)|考えと[きく]|考えておき|様子見"
    r"|持ち帰|検討します|捨てがた"
)
# what another person said in quotes (「…」って言ってた) is theirs, not a decision of the writer
QUOTED = re.compile(r"「[^」\n]*」(?=\s*(?:って|と|て)\s*(?:言|い[うっわ]|ゆ|話|聞|おっしゃ|提案|案))")
POINTS_BACK = re.compile(
    r"^(?:じゃあ|じゃ|では|ほな|なら|よし|うん|はい|了解|OK|ok|おけ|せやな|そやな)?[、,\s]*"
    r"(?:それ|これ|そっち|こっち|その案|この案|その方向|そちら|こちら|その件|この件|例の件|あれ)"
)
REQUEST = re.compile(
    r"(?:て(?:もらえ|いただけ|くれ)(?:ます|ません)?か|て(?:もらえる|くれる|もらえない|くれない))[\s。・…〜~ー!！?？w笑🙏]*$"
)
ASKS_WHEN = re.compile(r"いつ|何時|何日|何曜|なんじ|なんにち|日程|締切|締め切り|期限|納期")
LOOKS_BACK = re.compile(r"これ|それ|↑|上の|今の|さっきの|前の|この件|その件")
DUE = re.compile(r"になります|になりそう|予定です|の予定|見込み|目処|めど|メド")
TOPIC = re.compile(r"[はをがの]|[一-龯々]{2,}|[ァ-ヴー]{3,}")  # a short promise naming no topic points back
ABSOLUTE = re.compile(r"\d+\s*[/月]\s*\d+")
REVERSAL = re.compile(
    r"やっぱ|やはり|変更|撤回|取り消|取りやめ|とりやめ|キャンセル|中止|白紙|なしで|無しで|なしに|に変わ"
    r"|差し替え|じゃなくて|ではなく|やめて|見送り|延期|訂正|間違い"
)
# words that say when or how, not what: two decisions sharing only these are not about one thing
_NOT_SUBJECTS = frozenset(
    [
        "今日",
        "明日",
        "昨日",
        "今週",
        "来週",
        "先週",
        "今月",
        "来月",
        "先月",
        "今回",
        "次回",
        "前回",
        "先方",
        "変更",
        "決定",
        "確定",
        "都合",
        "予定",
        "みなさん",
    ]
)
_SUBJECT = re.compile(r"[一-龯々]{2,}|[ァ-ヴー]{2,}|[a-z0-9]{2,}")
SENTENCE = re.compile(r"(?:「[^」\n]*」|「|[^。！!？?\n「])+[。！!？?]*")  # a quote is one piece
MAX_FACT_CHARS = 300
POINTING_CHARS = 20  # a decision this short that points back keeps the message before it
KINDS = ("remember", "decision", "commitment", "preference", "date", "error_fix", "tool_result")


@dataclass(frozen=True)
class Fact:
    """One fact of a message: what it says, why it is kept, and where it came from."""

    kinds: tuple[str, ...]  # in the order of the table above
    text: str
    seq: str  # the message's ``seq`` (the history's order key)
    at: datetime | None
    role: str


def _folded(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


def _is_question(sentence: str) -> bool:
    s = _folded(sentence).strip()
    if REQUEST.search(s):
        return False  # 「〜してもらえますか」 asks for something: a wish, not a question
    if re.search(r"[?？][\s!！w笑]*$", s):
        return True
    return bool(QUESTION_END.search(s)) and not VOLITIONAL_END.search(s)


def kinds_of(sentence: str, role: str, at: datetime | None) -> tuple[str, ...]:
    """Why ``sentence`` is worth keeping (empty: it is not)."""
    s = QUOTED.sub("「」", _folded(sentence))  # another person's words decide nothing of the writer's
    if REMEMBER.search(s):
        kept = ["remember"]
    elif _is_question(s):
        return ()
    else:
        kept = []
    if UNSETTLED.search(s):
        return tuple(kept)  # wavering or hypothetical: kept only when asked to be
    if role == "assistant":  # the assistant reports what it did; it decides nothing itself
        return (*kept, "tool_result") if DONE.search(s) else tuple(kept)
    for kind, rule in (("decision", DECISION), ("commitment", COMMITMENT), ("preference", PREFERENCE)):
        if rule.search(s):
            kept.append(kind)
    if "commitment" not in kept and reading_due(s, at):
        kept.append("commitment")  # 「返信は週明けになります」: a day the writer holds to
    if TROUBLE.search(s) and FIXED.search(s):
        kept.append("error_fix")
    reading = read(s, at) if at is not None else None
    if reading is not None and _dated(s, reading, bool(kept)):
        kept.append("date")
    return tuple(kept)


def _dated(s: str, reading: Reading, kept: bool) -> bool:
    """A day (or a written clock time) beside a word of the calendar, another reason to keep the
    sentence, a clock time or a written date: 「今日は暑い」 is not an appointment."""
    if reading.date is None and not re.search(r"\d", reading.expression):
        return False
    return bool(OFFICE_WORDS.search(s)) or kept or reading.time is not None or reading.kind == "absolute"


def reading_due(s: str, at: datetime | None) -> bool:
    """A day or time the writer sets for their own work (「週明けになります」「15時の予定です」)."""
    if at is None or not DUE.search(s):
        return False
    reading = read(s, at)
    return reading is not None and (reading.date is not None or reading.time is not None)


def _date_note(text: str, at: datetime | None) -> str:
    """The day a relative date meant when it was said (「［来週＝11月30日（月）］」), else ``""``."""
    if at is None:
        return ""
    reading = read(_folded(text), at)
    if reading is None or reading.date is None or reading.year_said or reading.doubt or reading.ambiguous:
        return ""  # an absolute date is kept as said; a reading in doubt is not made a fact
    if ABSOLUTE.search(_folded(reading.expression)):
        return ""  # 「12/5（金）」 says its day already
    return f"［{reading.expression}＝{display_reading(reading)}］"


def _points_back(body: str, kinds: list[str], at: datetime | None) -> bool:
    """A short decision or promise that names nothing itself (「それで決定で！」「ほな明日までにやっとくわ」)
    keeps the message before it, which says what it is about."""
    if len(body) > POINTING_CHARS or not {"decision", "commitment"} & set(kinds):
        return False
    s = _folded(body)
    if POINTS_BACK.search(s):
        return True
    reading = read(s, at) if at is not None else None
    bare = s.replace(reading.expression, "") if reading is not None else s
    return not TOPIC.search(POINTS_BACK.sub("", bare))


def extract(messages: Sequence[dict[str, Any]]) -> list[Fact]:
    """The facts of ``messages`` (history documents: ``role``, ``text``, ``at``, ``seq``), oldest
    first, at most one per message (its kept sentences together), without what a later decision
    reversed."""
    return extract_superseded(messages)[0]


def extract_superseded(messages: Sequence[dict[str, Any]]) -> tuple[list[Fact], list[Fact]]:
    """``extract``, and the facts a later decision superseded (``supersede``)."""
    return supersede(_each(messages))


def _each(messages: Sequence[dict[str, Any]]) -> list[Fact]:
    """Every message's fact, oldest first."""
    facts: list[Fact] = []
    previous = carried = ""  # the message before; a lone 「覚えておいて！」 waiting for what it asks
    for i, m in enumerate(messages):
        text, role = " ".join(str(m.get("text") or "").split()), str(m.get("role") or "")
        at = m.get("at") if isinstance(m.get("at"), datetime) else None
        kept: list[str] = []
        kinds: list[str] = ["remember"] if carried and role == "user" else []
        asked = bool(kinds)  # 「重要！」「覚えておいてね。」 alone: what follows is what to keep
        for sentence in (x.strip() for x in SENTENCE.findall(text)):
            found = kinds_of(sentence, role, at)
            if not found and role == "user" and _fixes_previous(sentence, previous):
                found = ("error_fix",)  # 「再起動したら直った！」 after 「VPN繋がらない…」
            if not found and _answers_when(sentence, previous, at):
                found = ("date",)  # 「金曜です！」 after 「締切いつだっけ？」
            if asked and "remember" not in found:
                found = ("remember", *found)
            asked = asked or (found == ("remember",) and _bare(sentence))
            if found:
                kept.append(sentence)
                kinds.extend(k for k in found if k not in kinds)
        if kept:
            body = "".join(kept)
            if kinds == ["remember"] and _bare(body) and not carried:
                if i + 1 < len(messages) and not LOOKS_BACK.search(_folded(body)):
                    carried, previous = body, text[:MAX_FACT_CHARS]
                    continue  # the person says what to keep in their next message
                body = f"{previous}→{body}" if previous else body
            elif carried and role == "user":
                body = f"{carried}→{body}"
            elif previous and (
                _points_back(body, kinds, at)
                or ("error_fix" in kinds and not TROUBLE.search(_folded(body)))
                or (kinds == ["date"] and _answers_when(body, previous, at))
            ):
                body = f"{previous}→{body}"
            body = (body + _date_note(body, at))[:MAX_FACT_CHARS]
            facts.append(Fact(tuple(k for k in KINDS if k in kinds), body, str(m.get("seq") or ""), at, role))
        carried = "" if role == "user" else carried
        if text:
            previous = text[:MAX_FACT_CHARS]
    return facts


def subjects(text: str) -> set[str]:
    """The subject words of a statement (kanji and katakana runs, Latin words), folded."""
    return {w for w in _SUBJECT.findall(normalised(text)) if w not in _NOT_SUBJECTS}


def _reverses(later: Fact, earlier: Fact) -> bool:
    """``later`` changes what ``earlier`` settled (a decision, a day, a promise) on one subject."""
    settled = {"decision", "date", "commitment"} & set(earlier.kinds)
    if "decision" not in later.kinds or not settled or "remember" in earlier.kinds:
        return False
    return bool(REVERSAL.search(later.text)) and bool(subjects(later.text) & subjects(earlier.text))


def supersede(facts: Sequence[Fact]) -> tuple[list[Fact], list[Fact]]:
    """``facts`` (oldest first) without the decisions a later one reversed, and those."""
    kept: list[Fact] = []
    gone: list[Fact] = []
    for f in facts:
        gone += [g for g in kept if _reverses(f, g)]
        kept = [g for g in kept if not _reverses(f, g)] + [f]
    return kept, gone


def _bare(text: str) -> bool:
    """「覚えておいて！」 saying nothing else."""
    return not TOPIC.search(REMEMBER.sub("", _folded(text)))


def _answers_when(sentence: str, previous: str, at: datetime | None) -> bool:
    """A short day or time given after a question asking when (「締切いつだっけ？」→「金曜です！」)."""
    s = _folded(sentence)
    if at is None or len(s) > POINTING_CHARS or _is_question(s) or not _is_question(_folded(previous)):
        return False
    reading = read(s, at)
    return reading is not None and bool(ASKS_WHEN.search(_folded(previous)))


def _fixes_previous(sentence: str, previous: str) -> bool:
    s = _folded(sentence)
    return bool(FIXED.search(s)) and not _is_question(s) and bool(TROUBLE.search(_folded(previous)))


def normalised(text: str) -> str:
    """The form two statements of one fact share: NFKC, lower case, only letters and digits
    (no spaces, punctuation, emoji, long vowels or a 「w」 of laughter at the end)."""
    folded = _folded(text).lower()
    kept = "".join(ch for ch in folded if unicodedata.category(ch)[0] in "LN" and ch != "ー")
    return kept.rstrip("w")
