"""Tools on the Firestore emulator: every write tool executed twice with the same receipt has
one effect; concurrent deliveries of one call have one effect; the fake ChatWork server
receives exactly one create per task; organisation A cannot touch organisation B."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest

from infra.fake_chatwork import ChatWorkTasksApp, FakeChatWorkServer, Fault
from shared_lib.settings import Settings
from shared_lib.tools.chatwork_api import ChatWorkClient
from shared_lib.tools.chatwork_tasks import ChatWorkTaskBackend
from shared_lib.tools.task_backend import body_with_marker, task_marker
from shared_lib.turn.callctx import turn_budget
from tests.unit.tools.tool_fakes import ORG, OTHER_ORG, ROOM, SENDER, Clock, call, make_executor, seed

pytestmark = pytest.mark.integration
COLLECTIONS = (
    "tasks",
    "goals",
    "memories",
    "announcements",
    "users",
    "permission_changes",
    "sessions",
    "notes",
)


def snapshot(store, org=ORG):
    return {c: dict(store.query(f"orgs/{org}/{c}")) for c in COLLECTIONS}


def _task(ex, body, n, assignee="自分"):
    assert call(
        ex, "chatwork_task_create", {"body": body, "assignee_name": assignee}, call_id=f"setup-{n}"
    ).ok


def _goal(ex, title, n):
    assert call(
        ex,
        "goal_registration",
        {"title": title, "why": "w", "how": "h", "deadline": "月末"},
        call_id=f"setup-{n}",
    ).ok


def _memory(ex, content, n):
    assert call(ex, "save_memory", {"content": content, "category": "fact"}, call_id=f"setup-{n}").ok


WRITE_TOOLS = [
    (
        "chatwork_task_create",
        {"body": "見積書を作成", "assignee_name": "田中太郎", "limit_date": "明日"},
        None,
        SENDER,
    ),
    ("chatwork_task_complete", {"task_query": "見積書"}, lambda ex: _task(ex, "見積書を作成", 1), SENDER),
    ("delete_task", {"task_query": "見積書"}, lambda ex: _task(ex, "見積書を作成", 1), SENDER),
    ("goal_registration", {"title": "資格を取る"}, None, SENDER),
    (
        "goal_progress_report",
        {"progress_content": "半分", "progress_percent": 50},
        lambda ex: _goal(ex, "売上", 1),
        SENDER,
    ),
    ("delete_goal", {"goal_query": "売上"}, lambda ex: _goal(ex, "売上", 1), SENDER),
    ("save_memory", {"content": "コーヒーはブラック派", "category": "preference"}, None, SENDER),
    (
        "delete_memory",
        {"memory_query": "ブラック"},
        lambda ex: _memory(ex, "コーヒーはブラック派", 1),
        SENDER,
    ),
    ("announce", {"message": "明日は10時から", "recipients": ["山田次郎", "田中花子"]}, None, SENDER),
    ("send_to_all", {"message": "年末年始のお知らせ"}, None, SENDER),
    ("change_permission", {"target_user_name": "田中太郎", "new_level": 3}, None, "u-yamada"),
]


@pytest.fixture
def fs(firestore_store):
    seed(firestore_store)
    return firestore_store


@pytest.mark.parametrize(("tool", "params", "setup", "user"), WRITE_TOOLS, ids=[t[0] for t in WRITE_TOOLS])
def test_given_a_write_tool_executed_twice_with_the_same_receipt_then_one_effect(
    fs, tool, params, setup, user
):
    # GIVEN whatever the tool acts on
    ex = make_executor(fs)
    if setup:
        setup(ex)
    before = snapshot(fs)
    # WHEN the same call (same receipt) is executed twice
    first = call(ex, tool, params, call_id="T1-0-0", user=user)
    after_first = snapshot(fs)
    second = call(ex, tool, params, call_id="T1-0-0", user=user)
    # THEN the first had an effect, the second replayed the stored result and changed nothing
    assert first.ok, first
    assert after_first != before
    assert second.ok and second.replayed and second.result == first.result
    assert snapshot(fs) == after_first
    assert fs.get(f"orgs/{ORG}/receipts/T1-0-0")["status"] == "done"


def test_given_concurrent_deliveries_of_one_call_then_one_effect(fs):
    ex = make_executor(fs)
    outcomes, start = [], threading.Barrier(4)
    # each delivery runs as the executor stage runs it: under the turn's processing budget, which
    # is how long a call may wait for the store (four transactions on one receipt wait for each
    # other's locks on the emulator, ≈ 9 s on a quiet machine: past the tool's own timeout)
    budget = Settings().turn_budget_seconds

    def deliver():
        start.wait()
        now = datetime.now(UTC)
        with turn_budget(now + timedelta(seconds=budget), now):
            outcomes.append(call(ex, "save_memory", {"content": "同時に届いた記憶"}, call_id="T9-0-0"))

    threads = [threading.Thread(target=deliver) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(o.ok for o in outcomes) and sum(not o.replayed for o in outcomes) == 1, [
        (o.ok, o.error_code, o.message) for o in outcomes
    ]
    assert len(snapshot(fs)["memories"]) == 1


@pytest.fixture
def chatwork():
    with FakeChatWorkServer(ChatWorkTasksApp("emulator-token", accounts={102: "田中太郎"})) as server:
        yield server


@pytest.fixture
def cw_ex(fs, chatwork):
    client = ChatWorkClient(chatwork.api_base, "emulator-token", sleep=lambda _s: None)
    return make_executor(fs, tasks=ChatWorkTaskBackend(client))


def test_given_chatwork_tasks_each_executed_twice_then_the_server_receives_one_create_per_task(
    cw_ex, chatwork, fs
):
    bodies = ["見積書を作成", "議事録のまとめ", "請求書の送付"]
    for i, body in enumerate(bodies):
        for _ in range(2):
            assert call(
                cw_ex,
                "chatwork_task_create",
                {"body": body, "assignee_name": "田中太郎"},
                call_id=f"T{i}-0-0",
            ).ok
    creates = chatwork.app.creates()
    assert len(creates) == 3
    assert sorted(c["form"]["body"].split("\n")[0] for c in creates) == sorted(bodies)
    assert all(c["token_ok"] and c["form"]["to_ids"] == "102" for c in creates)


def test_given_a_crash_between_the_chatwork_call_and_the_receipt_then_the_redelivery_adopts_the_task(
    cw_ex, chatwork, fs
):
    marker = task_marker(ORG, "T1-0-0")
    chatwork.app.add_task(ROOM, body_with_marker("見積書を作成", marker), 102)
    fs.set(
        f"orgs/{ORG}/receipts/T1-0-0",
        {"status": "in_progress", "lease_until": Clock()() - timedelta(seconds=1)},
    )
    out = call(
        cw_ex, "chatwork_task_create", {"body": "見積書を作成", "assignee_name": "田中太郎"}, call_id="T1-0-0"
    )
    assert out.ok and chatwork.app.creates() == [] and len(chatwork.app.tasks(ROOM)) == 1


def test_given_chatwork_fails_after_creating_then_one_task_over_real_http(cw_ex, chatwork):
    chatwork.app.inject(Fault(502, method="POST", after_effect=True))
    chatwork.app.inject(Fault(0, method="POST", after_effect=True))
    assert call(cw_ex, "chatwork_task_create", {"body": "見積書", "assignee_name": "田中太郎"}).ok
    assert len(chatwork.app.tasks(ROOM)) == 1


def test_given_a_proposal_naming_b_ids_on_the_emulator_then_b_is_untouched(fs):
    seed(fs, OTHER_ORG)
    fs.set(
        f"orgs/{OTHER_ORG}/memories/m-b1", {"user_id": SENDER, "content": "秘密 GLOBEX", "category": "fact"}
    )
    fs.set(f"orgs/{OTHER_ORG}/goals/g-b1", {"user_id": SENDER, "title": "GLOBEX", "status": "active"})
    before = snapshot(fs, OTHER_ORG)
    ex = make_executor(fs)
    results = [
        call(ex, "delete_memory", {"memory_id": "m-b1"}, call_id="A1-0-0"),
        call(ex, "goal_progress_report", {"goal_id": "g-b1", "progress_percent": 90}, call_id="A1-0-1"),
        call(ex, "query_memory", {"query": "秘密"}, call_id="A1-0-2"),
    ]
    assert snapshot(fs, OTHER_ORG) == before
    assert all("GLOBEX" not in str(r.result) for r in results)
