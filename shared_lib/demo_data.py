"""The demo organisation: a small directory (seed 000's ソウルシンクス-like company) used by
``charter demo``, the local stack and the tests."""

from __future__ import annotations

from shared_lib.features.finetune.state.config import set_opt_in
from shared_lib.ports import Store
from shared_lib.tools.directory import seed_directory

DEMO_ORG = "demo"
DEMO_ROOM = "room-general"
DEMO_USER = "u-suzuki"

DEPARTMENTS: dict[str, str | None] = {
    "d-hq": None,
    "d-sales": "d-hq",
    "d-sales-east": "d-sales",
    "d-dev": "d-hq",
}
DEPARTMENT_NAMES = {"d-hq": "本社", "d-sales": "営業部", "d-sales-east": "東日本営業課", "d-dev": "開発部"}
DEPARTMENT_READINGS = {
    "d-hq": "ほんしゃ",
    "d-sales": "えいぎょうぶ",
    "d-sales-east": "ひがしにほんえいぎょうか",
    "d-dev": "かいはつぶ",
}
# ``reading``: the kana a person is also named by (「たなか」「タナカ」「Tanaka」 find 田中太郎).
_PEOPLE = [
    {
        "user_id": "u-suzuki",
        "name": "鈴木一郎",
        "reading": "すずき いちろう",
        "level": 2,
        "department_id": "d-sales",
    },
    {
        "user_id": "u-tanaka",
        "name": "田中太郎",
        "reading": "たなか たろう",
        "level": 2,
        "department_id": "d-sales",
    },
    {
        "user_id": "u-sato1",
        "name": "佐藤一郎",
        "reading": "さとう いちろう",
        "level": 3,
        "department_id": "d-sales-east",
    },
    {
        "user_id": "u-sato2",
        "name": "佐藤花子",
        "reading": "さとう はなこ",
        "level": 2,
        "department_id": "d-dev",
    },
    {
        "user_id": "u-yamada",
        "name": "山田次郎",
        "reading": "やまだ じろう",
        "level": 4,
        "department_id": "d-dev",
    },
    {"user_id": "u-kazu", "name": "カズ", "reading": "かず", "level": 6, "department_id": "d-hq"},
]
# Where each person is reached outside a conversation (an announcement's delivery): a direct
# room on the plain-HTTP channel, which the demo and the local stack's fake receiver record.
PEOPLE = [{**p, "channels": {"http": {"room_id": f"dm-{p['user_id']}"}}} for p in _PEOPLE]

# (speaker, text): a task request, an ambiguous person, chit-chat, a confirmation and
# its answers (announcing to everyone needs two), something the speaker may not do, a memory,
# a second task for 田中 and a turn of two steps by 田中 (look at his tasks, then complete the
# 資料 one: seed 002 §3), and a request the rule dictionary routes to OPS (seed 003).
MULTI_STEP_TEXT = "自分のタスクを確認して、資料のタスクは完了にして"
ROUTED_TEXT = "サーバーを再起動したい"  # config/routing.json: ops.server_restart
CONVERSATION: list[tuple[str, str]] = [
    (DEMO_USER, "田中さんに明日までに見積書を作成するタスクをお願いできる？"),
    (DEMO_USER, "佐藤さんに議事録のまとめを頼んでおいて"),
    (DEMO_USER, "今日は暑いね〜"),
    (DEMO_USER, "全員に明日の全体会議は10時からとアナウンスして"),
    (DEMO_USER, "はい"),
    (DEMO_USER, "はい"),
    (DEMO_USER, "全社員の一覧を見せて"),
    (DEMO_USER, "山田さんの権限を管理者に変更して"),
    (DEMO_USER, "覚えておいて：私はコーヒーはブラック派"),
    (DEMO_USER, "田中さんに明日までに資料作成のタスクをお願い"),
    ("u-tanaka", MULTI_STEP_TEXT),
    (DEMO_USER, ROUTED_TEXT),
]


def seed_demo_directory(store: Store, org_id: str = DEMO_ORG) -> None:
    """The directory, and the organisation's yes to fine-tuning data (seed 001 §29: off by default)."""
    seed_directory(store, org_id, PEOPLE, DEPARTMENTS, DEPARTMENT_NAMES, DEPARTMENT_READINGS)
    set_opt_in(store, org_id, True)
