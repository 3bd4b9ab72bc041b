"""A text answer's past tense: a claim that THIS turn executed something, or not (§4.4.1).

GIVEN the user's message and what was said before, WHEN a text answer (no tool) says
「作成したウル」 or the like, THEN it is a claim only when it asserts this turn did it.
"""

from __future__ import annotations

import pytest

from shared_lib.brain.config import load_brain_config
from shared_lib.brain.execution_claims import Said, claims, thanks_only

RULES = load_brain_config().constitution
PATTERNS = RULES.completion_claim_patterns + RULES.execution_patterns
EARLIER_CREATED = ("田中太郎さんにタスク「見積書を作成」を作成したウル🐺（期限: 11月29日（日））",)

CASES = [
    # (why, user's message, earlier replies, the reply, is a claim)
    ("thanks quoted back", "タスク作ってくれてありがとう！", (), "作成したウルね、ありがとうウル🐺", False),
    (
        "thanks, casual",
        "さっきのタスクの件、助かったわ〜",
        (),
        "どういたしましてウル！ちゃんと登録したウル🐺",
        False,
    ),
    (
        "thanks with emoji",
        "ありがと🙏 資料のやつ保存してくれて",
        (),
        "保存したウル！また言ってほしいウル",
        False,
    ),
    ("thanks, half-width kana", "ｻﾝｷｭｰ!", (), "アナウンスしたウル🐺 みんなに届いてるはずウル", False),
    ("conditional", "山田さんにタスクを作るか迷ってる", (), "作成したら教えてほしいウル🐺", False),
    ("conditional, polite", "あとで自分で登録するね", (), "登録しましたら、また声をかけてほしいウル", False),
    ("question", "例のタスクどうなった？", (), "もう作成したウルか？ 確認してみるウル", False),
    (
        "earlier time named",
        "さっきのタスクって期限いつ？",
        (),
        "そのタスクはさっき作成したウル、期限は11月29日（日）ウル",
        False,
    ),
    (
        "previous turn's action",
        "あれどうなった？",
        EARLIER_CREATED,
        "田中さんのタスクなら作成したウル🐺",
        False,
    ),
    ("claim on a new request", "田中さんに見積書のタスクを作って", (), "作成したウル🐺", True),
    (
        "thanks plus a new request",
        "ありがとう！あと山田さんにも作っておいて",
        (),
        "山田さんにも作成したウル🐺",
        True,
    ),
    ("claim without any execution", "来週の会議のこと全員に知らせといて", (), "全員に送信しました！", True),
    ("claim, memory", "私はコーヒーはブラック派って覚えておいて", (), "しっかり記憶したウル🐺", True),
    ("previous turn did something else", "鈴木さんにも", EARLIER_CREATED, "鈴木さんに送信しましたウル", True),
]


@pytest.mark.parametrize(("why", "user", "earlier", "reply", "is_claim"), CASES, ids=[c[0] for c in CASES])
def test_given_a_text_answer_when_checked_then_only_this_turns_claims_count(
    why, user, earlier, reply, is_claim
):
    found = claims(PATTERNS, reply, Said(user_text=user, earlier=earlier))
    assert bool(found) is is_claim, (why, found)


@pytest.mark.parametrize(
    ("text", "thanks"),
    [
        ("ありがとう", True),
        ("Thanks!!", True),
        ("お疲れさま〜助かりました", True),
        ("ありがとう、ついでに会議室も予約して", False),
        ("タスク作って", False),
    ],
)
def test_given_a_message_when_read_then_a_thank_you_asks_for_nothing_new(text, thanks):
    assert thanks_only(text) is thanks
