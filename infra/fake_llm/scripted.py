"""The scripted model: the fake server's built-in, deterministic answerer for the product demo.

Four kinds of calls reach it (see ``answer``):

* **Classifier** calls of the router (the text framed as ``<input>…</input>``, no tools):
  a verdict as JSON from a few keyword cases (``CLASSIFIER_CASES``), else CHAT.

* **Memory job** calls (the system text starts with ``[[charter-memory:JOB]]``): the daily
  digest, an event episode, the day's interests, tags; answered by ``memory_jobs``.
* **Proposal** calls (``submit_proposal`` is forced or offered as a tool): the last user
  message is matched against ``PROPOSAL_RULES``, a small keyword table (first match wins),
  and the chosen builder returns a proposal object, sent back as a ``submit_proposal``
  ``tool_use`` block with stop_reason ``tool_use``.
* **Response integration** calls (no forced tool, no ``submit_proposal`` tool): the last
  user message carries tool results; the answer is 2-4 short Japanese sentences in the
  persona of ソウルくん (every sentence ends with 「ウル」) quoting the key facts received.

Every reasoning string of a proposal is at least ``MIN_REASONING_CHARS`` long, because the
product rejects shorter reasoning.

>>> propose("田中さんに見積書を作成するタスクを明日までにお願い")["tool_calls"][0]["parameters"]
{'body': '見積書を作成', 'assignee_name': '田中', 'limit_date': '明日'}
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from infra.fake_llm import (
    choice,
    handover,
    heartbeat,
    jobs,
    judge,
    memory_jobs,
    recall,
    skills,
    steps,
    summary,
)
from infra.fake_llm.agent_state import with_state_update
from infra.fake_llm.scenario import JSON, MessagesRequest, Reply
from shared_lib.tools import person_names

PROPOSAL_TOOL = "submit_proposal"
MIN_REASONING_CHARS = 20
SAME_NAME_PEOPLE: dict[str, tuple[str, ...]] = {"佐藤": ("佐藤一郎", "佐藤花子")}

# a person as office workers name one: 「田中さん」, 「田中部長」, 「佐藤課長」, 「鈴木様」, 「山田先輩」
# (the titles the product's directory takes off a name: 「田中副部長」 is 田中, not 「田中副」)
_HONORIFIC = "(?:" + "|".join(re.escape(t) for t in person_names.TITLES if not t.isascii()) + ")"
_NAME = r"([一-龥々ァ-ヴー]{1,4}?)" + _HONORIFIC
_ADDRESSEE = re.compile(_NAME + r"(?:に|へ|宛|、|,|\s)")
_POSSESSOR = re.compile(_NAME + r"の")
_ANY_NAME = re.compile(_NAME)
_DATE_WORDS = ("今日中", "明日中", "明後日", "明日", "今日", "来週金曜", "月末")  # deadline words first
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
# a day said as a deadline (「12月1日まで」, 「12/3までに」, 「来週月曜まで」, 「金曜中」, 「年内に」): the
# charter's normaliser reads the words (``tools.normalize.normalize_deadline``), the model hands them over
_DAY = (
    r"(?:(?:(?:来年|今年|再来年)の?)?(?:\d{1,2}月\d{1,2}日|\d{1,2}[/.]\d{1,2}(?![\d.]))"
    r"(?:\s?[(（][月火水木金土日](?:曜日?)?[)）])?"
    r"|(?:再来週|来週|今週)?[月火水木金土日]曜日?)"
)
# a deadline by itself: 「年内」「1週間以内」「3営業日以内」「仕事納め」「週明け」
# 「一両日中」「三日以内」「来週前半」「来週半ば」「明朝」「今夜10時」「連休明け」「仕事始め」
_KANJI_NUM = r"[一二三四五六七八九十]{1,3}"
_WITHIN = (
    r"(?:年内|今週中|今月中|一両日中|(?:\d{1,3}|" + _KANJI_NUM + r")(?:日|週間|か月|ヶ月|カ月|年)以内|"
    r"(?:\d{1,2}|" + _KANJI_NUM + r")営業日以内|(?:今週|来週|再来週|週)の?(?:前半|後半|半ば|中頃)|"
    r"(?:今月|来月|\d{1,2}月|月)の?(?:前半|後半|半ば|中頃)|明朝|(?:今夜|今晩)の?\d{1,2}時(?:半|\d{1,2}分)?|"
    r"(?:上|下)半?期(?:末|中)|(?:今)?四半期(?:末|中)|仕事納め|御用納め|仕事始め|(?:お)?正月明け|連休明け|(?:お)?盆明け|年明け(?:早々|すぐ|一番)|来年早々|"
    r"新年早々|週明け(?:早々|すぐ|一番)|年明け|週明け)"
)
# a time alone said as a deadline (「17時までに」): the charter reads it as today's while it is ahead
_BY_TIME = r"(?:(?:今日|本日|明日|明後日)の?)?(?<![\d:/])\d{1,2}(?::\d{2}|時(?:半|\d{1,2}分)?)"
_DEADLINE = re.compile(
    _DAY + r"(?=\s*(?:まで|中|締め|〆|いっぱい))|" + _WITHIN + "|" + _BY_TIME + r"(?=\s*(?:まで|迄))"
)
# a day of the month or the week is taken out of the body only as a deadline: 「12月1日の会議」
# is what the task is about
_DATE_PHRASE = re.compile(
    "|".join(
        (
            _BY_TIME + r"\s*(?:まで|迄)に?",  # first: 「明日の17時までに」 whole, not 「明日」 alone
            r"(?:明後日|明日|今日|来週金曜日?|月末|\d{4}-\d{2}-\d{2})\s*(?:まで|中)?に?",
            _DAY + r"\s*(?:まで|中|いっぱい|〆|締め切?り?)(?:に|で)?",
            _WITHIN + r"(?:まで|中)?に?",
        )
    )
)
_TASK_END = re.compile(
    r"するタスク|というタスク|のタスク|タスク|ように|を?お願い|を?おねがい|を?頼ん|を?頼む|を?頼み|を?たのん|"
    r"を?やっといて|をしといて|をして|して(?:ほしい|ください|もらえ)"
)
_COMPLETE_INTENT = re.compile(r"完了(?:に|して|した|済)")
_QUOTED = re.compile(r"[「『]([^」』]+)[」』]")
_TRIM = "　 、。,.!！?？をにへ:：\n"


def _quote(text: str, limit: int = 40) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _after_colon(text: str) -> str | None:
    for colon in ("：", ":"):
        if colon in text:
            tail = text.split(colon, 1)[1].strip(_TRIM)
            if tail:
                return tail
    return None


def _limit_date(text: str) -> str | None:
    found = _ISO_DATE.search(text) or _DEADLINE.search(text)
    if found:
        return found.group(0).strip()
    return next((word for word in _DATE_WORDS if word in text), None)


def _task_body(text: str, addressee: re.Match[str]) -> str:
    """What the task is: the words after the person (「田中さんに見積書の作成をお願い」), or, when
    those only ask (「…のタスク、佐藤さんに振っといて〜」), the words before them."""
    rest = _DATE_PHRASE.sub("", text[addressee.end() :])
    end = _TASK_END.search(rest)
    body = (rest[: end.start()] if end else rest).strip(_TRIM)
    if not body or _ONLY_ASKING.fullmatch(body):
        before = _DATE_PHRASE.sub("", text[: addressee.start()])
        end = _TASK_END.search(before)
        earlier = (before[: end.start()] if end else before).strip(_TRIM)
        body = earlier or body
    return body or _quote(text)


# the words after the person that only hand the work over: 「振っといて〜」「回しといてくれる？」「投げといて」
_ONLY_ASKING = re.compile(
    r"(?:振っ|ふっ|回し|まわし|投げ|頼ん|たのん|渡し|割り振っ|アサインし)(?:て|と|とい|ておい|ちゃ)"
    r"[ぁ-んー〜~！!？?。🙏]{0,10}"
)


# --------------------------------------------------------------------------- proposal builders


def _confidence(overall: float, intent: float | None = None, parameters: float | None = None) -> JSON:
    return {
        "overall": overall,
        "intent": intent if intent is not None else overall,
        "parameters": parameters if parameters is not None else overall,
    }


def _context_used(text: str) -> list[str]:
    return [f"ユーザーの最新メッセージ「{_quote(text)}」の文言をそのまま根拠にした"]


def _tool_call(
    text: str,
    *,
    tool: str,
    params: JSON,
    confidence: JSON,
    intent: str,
    reason: str,
    alternatives: list[str],
    confirm: str = "",
    sources: dict[str, str] | None = None,
) -> JSON:
    """A tool_call proposal; parameter sources are ``user_message`` unless ``sources`` says otherwise."""
    sources = {name: (sources or {}).get(name, "user_message") for name in params}
    return {
        "output_type": "tool_call",
        "reasoning": {
            "intent_understanding": intent,
            "context_used": _context_used(text),
            "tool_selection_reason": reason,
            "alternatives_considered": alternatives,
        },
        "confidence": confidence,
        "tool_calls": [{"tool_name": tool, "parameters": params, "parameter_sources": sources}],
        "needs_confirmation": bool(confirm),
        "confirmation_question": confirm,
    }


def _text_response(text: str, reply: str, *, confidence: float, strategy: str) -> JSON:
    return {
        "output_type": "text_response",
        "reasoning": {
            "intent_understanding": f"ユーザーのメッセージ「{_quote(text)}」は会話そのものを求めている",
            "response_strategy": strategy,
            "no_tool_reason": "業務操作の依頼は含まれていないため、ツールを呼ばずに文章で返答する",
        },
        "confidence": _confidence(confidence),
        "text_response": reply,
    }


def _task_create(text: str) -> JSON:
    addressee = _ADDRESSEE.search(text)
    if addressee is None:  # not reachable through PROPOSAL_RULES (_is_task_request checks it)
        return _fallback(text)
    name, body = addressee.group(1), _task_body(text, addressee)
    if name in SAME_NAME_PEOPLE:
        return _clarify_same_name(name, body)
    params: JSON = {"body": body, "assignee_name": name}
    limit = _limit_date(text)
    if limit:
        params["limit_date"] = limit
    return _tool_call(
        text,
        tool="chatwork_task_create",
        params=params,
        confidence=_confidence(0.9, 0.95, 0.85),
        intent=f"{name}さんに「{body}」をタスクとして依頼したいという意図だと理解した",
        reason="担当者を指定した作業の依頼なので、ChatWorkのタスク作成ツールが最も適切である",
        alternatives=[
            "chatwork_task_search は既存タスクを調べるだけなので今回の依頼には合わない",
            "text_response で返すだけでは実際にタスクが作成されないので不十分である",
        ],
    )


def _clarify_same_name(name: str, body: str) -> JSON:
    people = SAME_NAME_PEOPLE[name]
    return {
        "output_type": "clarification_needed",
        "reasoning": {
            "ambiguity_detected": f"「{name}」という名前の社員が{len(people)}人いて、"
            "依頼先を一人に特定できない",
            "possible_interpretations": [
                f"{person}さんに「{body}」のタスクを依頼したいという解釈" for person in people
            ],
        },
        "confidence": _confidence(0.45, 0.8, 0.3),
        "clarification_question": f"{name}さんは{len(people)}人いるウル！"
        + "さんと".join(people)
        + "さんのどちらにお願いするウル？",
        "options": list(people),
    }


def _ops_restart(text: str) -> JSON:
    """An operation with impact (the OPS route's way): ask what and when before anything else."""
    return {
        "output_type": "clarification_needed",
        "reasoning": {
            "ambiguity_detected": "再起動の対象と、止めてよい時間帯がメッセージから分からない",
            "possible_interpretations": [
                "本番のサーバーを今すぐ再起動したい",
                "検証用のサーバーを都合のよい時間に再起動したい",
            ],
        },
        "confidence": _confidence(0.5, 0.8, 0.3),
        "clarification_question": "再起動は影響が大きいから、先に確かめたいウル🐺 どのサーバーを、いつ止めてよいか教えてほしいウル！",
        "options": ["本番（時間を決めて）", "検証環境（いつでも）"],
    }


# the request around what is to be kept: 「…だから覚えておいて」「…って覚えといてね🙏」
_KEEP_ASK = re.compile(
    r"[、,\s]*(?:だから|なので|ので|って|と|を)?[、,\s]*(?:覚えて|記憶して|覚えと)[^。！!？?]*[。！!？?🙏]*\s*$"
)


def _save_memory(text: str) -> JSON:
    """What to keep: after a colon (「覚えて：…」), else the message without its request."""
    content = _after_colon(text) or _KEEP_ASK.sub("", text).strip(_TRIM) or text.strip()
    return _tool_call(
        text,
        tool="save_memory",
        params={"content": content, "category": "preference"},
        confidence=_confidence(0.88),
        intent=f"「{_quote(content)}」という情報を今後のために覚えてほしいという依頼",
        reason="覚えておいてほしいという明示的な依頼なので、記憶を保存するツールを使うのが適切である",
        alternatives=["text_response で了解と返すだけでは、次回以降の会話で情報を使えないので不十分"],
        sources={"category": "inferred"},
    )


def _announcement_text(text: str) -> str:
    quoted = _QUOTED.search(text)
    if quoted:
        return quoted.group(1)
    tail = _after_colon(text)
    if tail:
        return tail
    stripped = re.sub(
        r"^.*?全員[にへ]?|(?:と|を)?(?:アナウンス|お知らせ|周知)(?:して|を?お願い).*$", "", text
    )
    return stripped.strip(_TRIM) or text.strip()


def _announce(text: str) -> JSON:
    message = _announcement_text(text)
    return _tool_call(
        text,
        tool="announce",
        params={"message": message, "recipients": "all"},
        confidence=_confidence(0.85),
        intent=f"全員に「{_quote(message)}」というお知らせを送りたいという依頼",
        reason="全員への周知の依頼なので、アナウンス送信ツールを使うのが最も適切である",
        alternatives=["個別のメッセージ送信では全員に届かず、送り漏れが起きるので不適切である"],
        confirm=f"全員に「{_quote(message)}」とアナウンスしてよいウル？",
        sources={"recipients": "inferred"},
    )


# 「営業部のみんなに」「開発チームの皆さんへ」「東日本営業課の全員に」: an announcement to a department
_DEPARTMENT_TO = re.compile(
    r"([一-龥々ァ-ヴーA-Za-z]{1,12}?(?:部|課|チーム|グループ)|(?<![ぁ-ん])[ぁ-ん]{2,12}?(?:ぶ|か))"  # 「えいぎょうぶ」
    r"の?(?:みんな|皆さん|みなさん|全員|メンバー)(?:に|へ)"
)
_ANNOUNCING = re.compile(r"アナウンス|お知らせ|周知|流して|連絡して|伝えて")


def _is_department_announcement(text: str) -> bool:
    return _DEPARTMENT_TO.search(text) is not None and _ANNOUNCING.search(text) is not None


def _department_announce(text: str) -> JSON:
    found = _DEPARTMENT_TO.search(text)
    assert found is not None  # PROPOSAL_RULES checks it
    department = found.group(1)
    quoted = _QUOTED.search(text)
    rest = re.sub(
        r"(?:って|と|を)?(?:アナウンス|お知らせ|周知|連絡|流|伝え)(?:して|しといて|しておいて|て|を?お願い).*$",
        "",
        text[found.end() :],
    )
    message = quoted.group(1) if quoted else (_after_colon(text) or rest.strip(_TRIM) or text.strip())
    return _tool_call(
        text,
        tool="announce",
        params={"message": message, "department": department},  # the department's everyone
        confidence=_confidence(0.85),
        intent=f"{department}のみんなに「{_quote(message)}」というお知らせを送りたいという依頼",
        reason="部署のみんなへの周知の依頼なので、アナウンス送信ツールに部署を指定して使うのが最も適切である",
        alternatives=["全員へのアナウンスでは部署の外の人にも届いてしまうので不適切である"],
        confirm=f"{department}のみんなに「{_quote(message)}」とアナウンスしてよいウル？",
    )


def _change_permission(text: str) -> JSON:
    named = _ANY_NAME.search(text)
    level = re.search(r"(?:レベル|level)\s*(\d+)", text, re.IGNORECASE)
    target = named.group(1) if named else ""
    params: JSON = {"target_user_name": target} if target else {}  # no name: left for the product to ask
    params["new_level"] = int(level.group(1)) if level else 6
    return _tool_call(
        text,
        tool="change_permission",
        params=params,
        confidence=_confidence(0.8 if target else 0.5),
        intent=f"{target or '指定された社員'}さんの権限レベルを変更したいという依頼だと理解した",
        reason="権限の変更を明示的に求めているので、権限変更ツールを使うのが適切である",
        alternatives=["view_all_users で一覧を見るだけでは権限は変わらないので今回の依頼には合わない"],
        sources={} if level else {"new_level": "default"},
    )


def _view_all_users(text: str) -> JSON:
    return _tool_call(
        text,
        tool="view_all_users",
        params={},
        confidence=_confidence(0.9),
        intent="全社員の一覧を確認したいという依頼だと理解した（絞り込み条件はない）",
        reason="社員全員の情報を一覧で返すツールがあるので、それを使うのが最も直接的である",
        alternatives=["特定の一人を調べるツールでは全社員を一度に確認できないので不適切である"],
    )


def _task_complete(text: str) -> JSON:
    quoted = _QUOTED.search(text)
    before = re.match(r"^(?:.*?さん[にのへ、]\s*)?(.*?)(?:の)?タスク", text)
    query = (quoted.group(1) if quoted else before.group(1).strip(_TRIM) if before else "") or text.strip()
    return _tool_call(
        text,
        tool="chatwork_task_complete",
        params={"task_query": query},
        confidence=_confidence(0.75),
        intent=f"「{_quote(query)}」に当てはまるタスクを完了にしたいという依頼",
        reason="既存タスクを完了状態にしたいという依頼なので、タスク完了ツールが適切である",
        alternatives=["chatwork_task_create は新しいタスクを作るツールなので今回の依頼には合わない"],
    )


def _task_search(text: str) -> JSON:
    owner = _POSSESSOR.search(text)
    assignee = owner.group(1) if owner else "自分"
    return _tool_call(
        text,
        tool="chatwork_task_search",
        params={"assignee_name": assignee},
        confidence=_confidence(0.9),
        intent=f"{assignee}が担当しているタスクの一覧や状況を確認したいという依頼",
        reason="タスクの一覧や状況の確認なので、タスク検索ツールを使うのが最も適切である",
        alternatives=["chatwork_task_create は新しいタスクを作ってしまうので今回の依頼には合わない"],
        sources={} if owner else {"assignee_name": "default"},
    )


def _recall(text: str) -> JSON:
    """「〇〇の連絡先なんだっけ？」: what the person asked to keep, looked up in their memories."""
    query = re.sub(
        r"(?:って|は)?(?:なんだっけ|何だっけ|なんやったっけ|覚えてる|覚えている).*$", "", text.strip()
    )
    return _tool_call(
        text,
        tool="query_memory",
        params={"query": query.strip(_TRIM) or text.strip()},
        confidence=_confidence(0.85),
        intent=f"「{_quote(query or text)}」について以前覚えておいてもらったことを思い出したいという依頼",
        reason="以前に覚えておいてと頼まれた内容を尋ねているので、記憶を検索するツールを使うのが適切である",
        alternatives=["save_memory は新しく覚えるツールなので今回の依頼には合わない"],
    )


def _outcome(text: str) -> JSON:
    """「〇〇の話どうなった？」: how something turned out, looked up in memory (what the person kept,
    and the episodes of what happened: ``infra.fake_llm.recall``)."""
    topic = recall.outcome_topic(text)
    return _tool_call(
        text,
        tool="query_memory",
        params={"query": topic},
        confidence=_confidence(0.8),
        intent=f"「{_quote(topic)}」がその後どうなったか、以前の出来事を思い出してほしいという依頼",
        reason="過去に話した件の結果を尋ねているので、記憶と出来事を検索するツールを使うのが適切である",
        alternatives=["save_memory は新しく覚えるツールなので今回の依頼には合わない"],
    )


_GREETINGS: dict[str, str] = {
    "良いお年を": "良いお年をウル！今年も一年ありがとうございましたウル🎍",
    "よいお年を": "良いお年をウル！今年も一年ありがとうございましたウル🎍",
    "あけましておめでとう": "あけましておめでとうございますウル！今年もよろしくお願いしますウル🎍",
    "お世話になりました": "こちらこそお世話になりましたウル！またいつでも声をかけてほしいウル！",
    "お疲れ様": "お疲れさまウル！何かお手伝いできることはあるウル？",
    "おつかれ": "お疲れさまウル！何かお手伝いできることはあるウル？",
    "おはよう": "おはようございますウル！今日も一日よろしくお願いしますウル！",
    "こんにちは": "こんにちはウル！何かお手伝いできることはあるウル？",
    "こんばんは": "こんばんはウル！今日も一日お疲れさまでしたウル！",
    "ありがとう": "どういたしましてウル！また何でも聞いてほしいウル！",
}


# a department as the product's context names it: 「開発部〔d-dev〕」 (the name, then the id)
_DEPARTMENT = re.compile(r"([^\s、,（(〔【:：\-]{1,20})〔([A-Za-z0-9_\-]{1,128})〕")
_TEAM_ASKS = re.compile(r"見せて|教えて|どうなって|どないな|状況|一覧|知りたい|確認して|どんな感じ|[?？]")
_TEAM_ACTS = ("お願い", "作成", "追加", "完了", "登録", "削除", "ください")
_UNIT = re.compile(r"(?:部|課|室|チーム|グループ|G)$")


def departments_in(system: str) -> dict[str, str]:
    """The departments the context names, name → id (「営業部〔d-sales〕」).

    >>> departments_in("部署: 営業部〔d-sales〕\\n- 山田次郎（部署: 開発部〔d-dev〕、ID: u-yamada）")
    {'営業部': 'd-sales', '開発部': 'd-dev'}
    """
    return {m.group(1): m.group(2) for m in _DEPARTMENT.finditer(system)}


def _team_view(text: str, system: str) -> JSON | None:
    """「開発部のタスクってどうなってる？」「営業のみんなの目標見せて」: a department's tasks or goals,
    its id read from the context's departments as a model reads them; a department the context
    does not name is not guessed (``None``: the other rules answer)."""
    tool = "view_team_goals" if "目標" in text else "view_team_tasks" if "タスク" in text else None
    if tool is None or not _TEAM_ASKS.search(text) or any(word in text for word in _TEAM_ACTS):
        return None
    for name, department in sorted(departments_in(system).items(), key=lambda item: -len(item[0])):
        stem = _UNIT.sub("", name)
        if name in text or (len(stem) >= 2 and f"{stem}の" in text):
            what = "目標" if tool == "view_team_goals" else "タスク"
            return _tool_call(
                text,
                tool=tool,
                params={"target_department_id": department},
                confidence=_confidence(0.85),
                intent=f"{name}のメンバーの{what}の状況を知りたいという依頼",
                reason=f"部署単位の{what}の一覧なので、チームの{what}を確認するツールを使うのが適切である",
                alternatives=[f"個人の{what}を調べるツールでは部署全体が分からないので合わない"],
                sources={"target_department_id": "context"},
            )
    return None


def _greeting(text: str) -> JSON:
    word = next(word for word in _GREETINGS if word in text)
    return _text_response(
        text,
        _GREETINGS[word],
        confidence=0.95,
        strategy=f"「{word}」という挨拶なので、ソウルくんらしく明るく挨拶を返す",
    )


def _heat_small_talk(text: str) -> JSON:
    reply = "本当に暑い日が続いているウル！こまめに水分をとって、無理しないでほしいウル！"
    return _text_response(
        text, reply, confidence=0.95, strategy="暑さについての雑談なので、共感しつつ体調を気づかう一言を返す"
    )


def _fallback(text: str) -> JSON:
    reply = (
        "ごめんなさいウル、ちょっとよく分からなかったウル。"
        "タスクの作成や確認、全員へのアナウンスなどをお手伝いできるウル！"
    )
    return _text_response(
        text,
        reply,
        confidence=0.6,
        strategy="意図を特定できなかったので、できることを案内して言い直してもらう",
    )


# --------------------------------------------------------------------------- the rule table


def _has(*groups: tuple[str, ...]) -> Callable[[str], bool]:
    """Predicate: for every group, at least one of its words occurs in the text."""
    return lambda text: all(any(word in text for word in group) for group in groups)


# a request word: 「お願い」「おねがいしまーす」「頼んどいて」「やっといて」「してもらえます？」
_ASKING = (
    "タスク", "頼んで", "頼んど", "頼む", "頼み", "たのむ", "たのん", "お願い", "おねがい", "やっといて",
    "しといて", "してもらえ", "してもらって",
)  # fmt: skip
# a request taken back in the same message: 「…のタスク…いや、やっぱりいいや」「やっぱやめとく」
_TAKEN_BACK = (
    "やっぱりいい",
    "やっぱいい",
    "やっぱりやめ",
    "やっぱやめ",
    "やっぱりなし",
    "やっぱなし",
    "今のなし",
    "なんでもない",
)


def _taken_back(text: str) -> JSON:
    return _text_response(
        text,
        "了解ウル、今回は何もしないでおくウル🐺 また必要になったら声をかけてほしいウル！",
        confidence=0.85,
        strategy="依頼を言いかけて取り消しているので、何も実行せずに了解したことだけを伝える",
    )


# 「はい」 with nothing asked: a confirmation the product holds is answered before any model sees it
_BARE_ANSWER = re.compile(
    r"(?:はい|うん|ええ|OK|ok|おk|おけ|了解|りょ|お願いします|いいえ|いや|やめて|キャンセル)[!！。〜ー🙏\s]*"
)


def _bare_answer(text: str) -> JSON:
    return _text_response(
        text,
        "いま確認待ちの操作はないウル🐺 何をお手伝いするか教えてほしいウル！",
        confidence=0.8,
        strategy="確認を求めていないのに返事だけが来たので、待っている操作がないことを伝えて用件を尋ねる",
    )


def _is_task_request(text: str) -> bool:
    """A person is addressed (「〇〇さんに」) with a request word, and it is not about listing/completing tasks."""
    addressed = _ADDRESSEE.search(text) is not None and _has(_ASKING)(text)
    return addressed and not ("一覧" in text or _COMPLETE_INTENT.search(text))


@dataclass(frozen=True)
class ProposalRule:
    name: str
    applies: Callable[[str], bool]
    build: Callable[[str], JSON]


PROPOSAL_RULES: tuple[ProposalRule, ...] = (
    # delegated jobs (infra.fake_llm.jobs): a job's own first step, and a person's delegation
    ProposalRule("job_step", jobs.is_job_turn, jobs.job_step),
    ProposalRule("delegate_task", jobs.is_delegation, jobs.delegate),
    # heartbeat tasks (infra.fake_llm.heartbeat): a run's turn, and a person setting one
    ProposalRule("heartbeat_run", heartbeat.is_run, heartbeat.run),
    ProposalRule("schedule_heartbeat_task", heartbeat.is_request, heartbeat.schedule),
    ProposalRule(
        "recall", _has(("なんだっけ", "何だっけ", "なんやったっけ", "覚えてる？", "覚えてる?")), _recall
    ),
    ProposalRule("save_memory", _has(("覚えて", "覚えとい", "記憶して")), _save_memory),
    ProposalRule("announce_department", _is_department_announcement, _department_announce),
    ProposalRule("announce", _has(("全員",), ("アナウンス", "お知らせ", "周知")), _announce),
    ProposalRule("change_permission", _has(("権限",), ("変更",)), _change_permission),
    ProposalRule("view_all_users", _has(("全社員",), ("一覧",)), _view_all_users),
    ProposalRule("taken_back", _has(_TAKEN_BACK), _taken_back),  # 「…いや、やっぱりいいや」
    ProposalRule("bare_answer", lambda t: _BARE_ANSWER.fullmatch(t.strip()) is not None, _bare_answer),
    ProposalRule("task_create", _is_task_request, _task_create),  # 佐藤 → clarification_needed
    # look first, then act: a search that hands over to a next step (infra.fake_llm.steps)
    ProposalRule(
        "task_check_then_ask", steps.is_check_then_ask, lambda t: steps.check_then_ask(t, _task_search(t))
    ),
    ProposalRule("task_check_then_act", steps.is_first_step, lambda t: steps.first_step(t, _task_search(t))),
    ProposalRule("task_complete", _has(("タスク",), ("完了",)), _task_complete),
    ProposalRule(
        "task_search",
        _has(("タスク",), ("一覧", "確認", "教えて", "見せて", "みせて", "見して")),
        _task_search,
    ),
    ProposalRule("ops_restart", _has(("再起動",)), _ops_restart),
    ProposalRule("outcome", recall.is_outcome_question, _outcome),
    ProposalRule("greeting", _has(tuple(_GREETINGS)), _greeting),
    ProposalRule("small_talk_heat", _has(("暑い",)), _heat_small_talk),
    ProposalRule("fallback", lambda text: True, _fallback),
)


def proposal_rule_for(text: str) -> ProposalRule:
    return next(rule for rule in PROPOSAL_RULES if rule.applies(text))


_HALF_WIDTH_KANA = re.compile(r"[\uff61-\uff9f]+")


def propose(text: str) -> JSON:
    """The proposal object (``submit_proposal`` input) for the user's message (half-width kana
    read as the usual kana: 「ﾀﾅｶさんにﾐｰﾃｨﾝｸﾞ資料を」)."""
    text = _HALF_WIDTH_KANA.sub(lambda m: unicodedata.normalize("NFKC", m.group(0)), text)
    return proposal_rule_for(text).build(text)


# --------------------------------------------------------------------------- response integration

# by internal name and by the display name the charter hands the phrasing step
_TOOL_OPENINGS: dict[str, str] = {
    "タスクの作成": "タスクを作成したウル！",
    "タスクの完了": "タスクを完了にしたウル！",
    "タスクの確認": "タスクを確認したウル！",
    "記憶の保存": "しっかり覚えたウル！",
    "記憶の確認": "覚えていることを確かめたウル！",
    "アナウンスの送信": "アナウンスを送ったウル！",
    "権限の変更": "権限を変更したウル！",
    "全社員の一覧の確認": "社員の一覧を確認したウル！",
    "目標の設定": "目標、受け取ったウル！",
    "goal_registration": "目標、受け取ったウル！",
    "chatwork_task_create": "タスクを作成したウル！",
    "chatwork_task_complete": "タスクを完了にしたウル！",
    "chatwork_task_search": "タスクを確認したウル！",
    "save_memory": "しっかり覚えたウル！",
    "announce": "アナウンスを送ったウル！",
    "change_permission": "権限を変更したウル！",
    "view_all_users": "社員の一覧を確認したウル！",
    "スキルの提案": "スキルを下書きとして保存したウル！",
    "定期的な仕事の登録": "定期的な仕事を登録したウル！",
    "schedule_heartbeat_task": "定期的な仕事を登録したウル！",
    "propose_skill": "スキルを下書きとして保存したウル！",
}
_KEYWORD_OPENINGS: tuple[tuple[str, str], ...] = (
    ("タスクを作成", "タスクを作成したウル！"),
    ("タスク", "タスクの結果を確認したウル！"),
    ("記憶", "しっかり覚えたウル！"),
    ("アナウンス", "アナウンスを送ったウル！"),
    ("権限", "権限を変更したウル！"),
    ("社員", "社員の情報を確認したウル！"),
)
_FAILURE = re.compile(
    r'"success"\s*:\s*false|"ok"\s*:\s*false|"error"\s*:\s*"|^error|エラー|失敗|できませんでした',
    re.IGNORECASE | re.MULTILINE,
)
_INSTRUCTION_MARKERS = ("ソウル", "伝えて", "ください", "言い換え", "返答", "まとめて", "ユーザー")


def _json_facts(text: str, limit: int) -> list[str]:
    decoder = json.JSONDecoder()
    for start in (i for i, char in enumerate(text) if char in "{["):
        try:
            value, _ = decoder.raw_decode(text[start:])
        except json.JSONDecodeError:
            continue
        facts = _with_times(list(dict.fromkeys(_scalar_leaves(_last_step(value)))))  # a fact said once
        if facts:
            return facts[:limit]
    return []


def _scalar_leaves(value: Any, key: str = "") -> Iterator[str]:
    if isinstance(value, dict):
        for child_key, child in value.items():
            yield from _scalar_leaves(child, str(child_key))
    elif isinstance(value, list):
        for child in value:
            yield from _scalar_leaves(child, key)
    elif value is not None and not isinstance(value, bool) and str(value) != "" and not _bookkeeping(key):
        # a bare number says nothing to a person: a count is said as one, unquoted (「該当は2件」,
        # 「該当は0件」: a quoted 「0件」 read as a title); a person and a day are said as what they
        # are (「担当は田中太郎さん」「期限は11月30日（月）」)
        if key in _COUNTS:
            yield f"該当は{value}件"
        elif key == "member_count":
            yield f"メンバー{value}人"
        elif key in _PEOPLE:
            yield f"担当は{_quote(str(value), 30)}さん"
        elif key in _DAYS:
            yield f"期限は{_quote(str(value), 30)}"
        elif key in _TIMES:
            yield f"{_TIME_MARK}{_quote(str(value), 20)}"
        else:
            yield f"「{_quote(str(value), 60)}」"


_COUNTS = frozenset({"count", "total", "matched", "found"})
_PEOPLE = frozenset({"assignee", "assignee_name"})
_DAYS = frozenset({"limit_date", "limit", "deadline", "due"})
_TIMES = frozenset({"limit_time", "due_time"})
_TIME_MARK = "\x00"


def _with_times(facts: list[str]) -> list[str]:
    """A deadline's time joins its day (「期限は11月30日（月）22時」), else is said as a time."""
    out: list[str] = []
    for fact in facts:
        if fact.startswith(_TIME_MARK):
            at = fact.removeprefix(_TIME_MARK)
            if out and out[-1].startswith("期限は"):
                out[-1] += at
            else:
                out.append(f"時刻は{at}")
        else:
            out.append(fact)
    return out


def _last_step(value: Any) -> Any:
    """The integration prompt lists every step's result in order (``brain.integration``): a turn of
    several steps ended with what the person asked for (a search, then the completion), so that
    step's result is the news; the earlier ones only led to it."""
    if isinstance(value, list) and value and all(isinstance(v, dict) and "result" in v for v in value):
        return value[-1]
    return value


def _bookkeeping(key: str) -> bool:
    """Keys a person does not need to hear about: ids, tool names, counters of the machinery."""
    return key in (
        "tool",
        "tool_name",
        "id",
        "status",
        "dry_run",
        "replayed",
        "started",
        "next_step",
        "next_question",
        "level",  # a person's authority level: a number that tells a reader nothing (「2」)
    ) or key.endswith("_id")


def _informative(line: str) -> bool:
    """A result line worth quoting: not an instruction, a heading (``...:``) or a bare tool name."""
    if len(line) < 2 or line.endswith((":", "：")) or re.fullmatch(r"[a-z_]+", line):
        return False
    return not any(marker in line for marker in _INSTRUCTION_MARKERS)


def key_facts(text: str, limit: int = 4) -> list[str]:
    """The facts to quote: scalar fields of the first JSON value, else the first informative lines."""
    facts = _json_facts(text, limit)
    if facts:
        return facts
    lines = [line.strip(" \t-・*") for line in text.splitlines()]
    useful = [line for line in lines if _informative(line)]
    return [f"「{_quote(line, 60)}」" for line in useful[:2]]


def _opening(text: str) -> str:
    if _FAILURE.search(text):
        return "ごめんなさいウル、うまくいかなかったみたいウル。"
    # the last step's tool opens (the results are listed in order: a search, then the completion)
    named = [(text.rfind(tool), sentence) for tool, sentence in _TOOL_OPENINGS.items() if tool in text]
    if named:
        return max(named, key=lambda found: found[0])[1]
    return next((sentence for word, sentence in _KEYWORD_OPENINGS if word in text), "結果を確認したウル！")


_DRAFT = re.compile(r"<draft>\n(.*?)\n</draft>", re.DOTALL)
_WORDING = re.compile(r"（別案(\d+)）")
_OPENERS = ("", "うん、", "えっと、", "そうだね、", "なるほど、", "ええと、", "うーん、", "それなら、")


def reword(draft: str, system: str) -> str:
    """Best-of-N's other wording of a text answer (``<draft>``): the ``（別案i）`` line of the
    system picks an opener and, for even i, the order of the sentences after the first."""
    found = _WORDING.search(system)
    i = int(found.group(1)) if found else 1
    sentences = [s.strip() for s in re.findall(r"[^。！？!?\n]+[。！？!?]*", draft) if s.strip()]
    if i % 2 == 0 and len(sentences) > 2:
        sentences = [sentences[0], *reversed(sentences[1:])]
    return _OPENERS[i % len(_OPENERS)] + "".join(sentences)


def integrate(text: str) -> str:
    """A 2-4 sentence ソウルくん answer phrasing the tool results found in ``text``."""
    facts = key_facts(text)
    opening = _opening(text)
    detail = "詳しい結果は届いていないウル。"
    if facts:
        detail = "、".join(facts) + "だウル。"
    closing = "他にも手伝えることがあったら言ってほしいウル！"
    if opening.startswith("ごめん"):
        closing = "もう一度試してみてほしいウル。"
    elif asked := _NEXT_QUESTION.findall(text):  # a flow that goes on (the goal's next step) asks, last
        closing = "次に教えてほしいウル。" + json.loads(f'"{asked[-1]}"')
    return opening + detail + closing


# what a flow's result asks next (``goal_registration``'s ``next_question``), as JSON writes it
_NEXT_QUESTION = re.compile(r'"next_question"\s*:\s*"((?:[^"\\]|\\.)*)"')


# --------------------------------------------------------------------------- the router's classifier

# The router frames the text it classifies between these tags (shared_lib.routing.classifier).
_CLASSIFIER_INPUT = re.compile(r"\A<input>\n(.*)\n</input>\Z", re.DOTALL)
# (route, keywords, confidence, reason): the first route whose keyword the text contains.
CLASSIFIER_CASES: tuple[tuple[str, tuple[str, ...], float, str], ...] = (
    ("ANALYZE", ("傾向", "集計", "分析"), 0.8, "集計や傾向の分析を求めている"),
    ("PLAN", ("計画を立て", "進め方", "段取"), 0.75, "進め方の整理を求めている"),
    ("RESEARCH", ("調べて", "調査", "比較して"), 0.7, "調べてまとめることを求めている"),
    ("OPS", ("障害", "復旧", "エラーが出"), 0.7, "障害対応の手順を求めている"),
)


def classifier_input(request: MessagesRequest) -> str | None:
    """The text of a classifier call (framed as ``<input>…</input>``), else ``None``."""
    if request.tool_names():
        return None
    found = _CLASSIFIER_INPUT.match(request.last_user_text().strip())
    return found.group(1) if found else None


def classify(text: str) -> JSON:
    """The classifier's verdict: a keyword case, else CHAT (JSON only, as its prompt asks).

    >>> classify("先月の問い合わせの傾向を見たい")["route"], classify("ありがとう")["route"]
    ('ANALYZE', 'CHAT')
    """
    for route, keywords, confidence, reason in CLASSIFIER_CASES:
        hit = next((k for k in keywords if k in text), None)
        if hit:
            return {"route": route, "confidence": confidence, "reason": reason, "evidence": [hit]}
    return {"route": "CHAT", "confidence": 0.9, "reason": "説明・相談・雑談", "evidence": []}


# --------------------------------------------------------------------------- entry point


def _required_tool(request: MessagesRequest) -> str | None:
    forced = request.forced_tool()
    if forced:
        return forced
    names = request.tool_names()
    if request.tool_choice_type() == "any" and names:
        return PROPOSAL_TOOL if PROPOSAL_TOOL in names else names[0]
    if request.tool_choice_type() != "none" and PROPOSAL_TOOL in names:
        return PROPOSAL_TOOL
    return None


USER_MARKER = "【ユーザーのメッセージ】"


def utterance(request: MessagesRequest) -> str:
    """What the user said this turn, not the context the product sent with it.

    The product sends the rendered context first and the user's message last: either as
    separate text blocks of the last user message, or after the marker 【ユーザーのメッセージ】.
    """
    for message in reversed(request.messages):
        if message.get("role") != "user":
            continue
        content = message.get("content", "")
        if isinstance(content, list):
            texts = [
                str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text"
            ]
            content = texts[-1] if texts else ""
        text = str(content)
        if USER_MARKER in text:
            text = text.split(USER_MARKER, 1)[1]
            text = text.split("\n\n【", 1)[0]
        return text.strip()
    return ""


def answer(request: MessagesRequest) -> Reply:
    """Answer like the product's LLM would: a proposal, another forced tool call, or integration text."""
    if (classified := classifier_input(request)) is not None:
        return Reply(content=[{"type": "text", "text": json.dumps(classify(classified), ensure_ascii=False)}])
    if (memory := memory_jobs.answer(request)) is not None:  # a background memory job's call
        return memory
    if (to_summarise := summary.summary_input(request)) is not None:  # compaction's summary call
        return Reply(
            content=[{"type": "text", "text": summary.summarise(request.system_text(), to_summarise)}]
        )
    if (candidates := judge.judge_input(request)) is not None:  # Best-of-N's evaluation call
        return Reply(
            content=[{"type": "text", "text": json.dumps(judge.verdict(candidates), ensure_ascii=False)}]
        )
    tool = _required_tool(request)
    if tool == PROPOSAL_TOOL:
        later = steps.is_later_step(request)  # a step after a tool_result: multi-step scenarios
        said = utterance(request)
        if later:
            proposal = steps.next_step(request)
        else:  # a skill's proposal or call (infra.fake_llm.skills) depends on the tools offered
            # a hand-over check is answered from the conversation the request carries (handover)
            proposal = (
                choice.proposal(said, request, propose)  # 「2」 to its own numbered question
                or handover.proposal(said, request)
                or skills.proposal(said, request.tool_names())
                or _team_view(said, request.system_text())
                or propose(said)
            )
            proposal = steps.with_route_doubt(said, proposal)
        proposal = with_state_update(said, proposal, later=later)
        return Reply(
            content=[{"type": "tool_use", "name": PROPOSAL_TOOL, "input": proposal}], stop_reason="tool_use"
        )
    if tool is not None:
        return Reply(content=[{"type": "tool_use", "name": tool, "input": {}}], stop_reason="tool_use")
    said = request.last_user_text()
    text = (
        reword(found.group(1), request.system_text()) if (found := _DRAFT.search(said)) else integrate(said)
    )
    return Reply(content=[{"type": "text", "text": text}], stop_reason="end_turn")
