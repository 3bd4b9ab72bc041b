"""What the model reads of a context is what the persona says: deadlines as 「1月30日（金）」
(the year only when it is not this year's), states as 未完了 / 進行中, the day with its weekday,
and a source that could not be read by its section's name. A model shown 「2026-01-30」 or
「open」 repeats them to the person."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime

import pytest
from context_fakes import context_input

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.context import ContextBuilder
from shared_lib.context.record import record, render_recorded
from shared_lib.context.render import SOURCE_LABELS, build_sections, render, tool_words
from shared_lib.context.sources import default_sources
from shared_lib.settings import config_files
from shared_lib.tools.catalog import TOOLS_FILE, read_catalogue
from shared_lib.tools.directory import seed_directory
from shared_lib.turn.envelope import ContextSection

# a Monday night at the year's end, Japan time (15:40 UTC is 0:40 the next day in Tokyo)
NOW = datetime(2026, 12, 28, 15, 40, tzinfo=UTC)
ISO = re.compile(r"\d{4}-\d{2}-\d{2}")


def rendered(values: dict, degraded: list[str] | None = None) -> str:
    truths = {s.name: s.truth for s in default_sources()}
    sections = build_sections(
        values, truths, now=NOW, degraded=degraded or [], fallback_user={"user_id": "u1"}
    )
    return render(sections)


@pytest.mark.parametrize(
    ("limit", "shown"),
    [
        ("2026-12-30", "期限: 12月30日（水）"),
        ("2027-01-05", "期限: 2027年1月5日（火）"),  # next year: the year is said
        (date(2026, 12, 31), "期限: 12月31日（木）"),
        ("2026-12-29T18:00:00+09:00", "期限: 12月29日（火）18時"),
        (None, "期限: なし"),
    ],
)
def test_a_tasks_deadline_is_shown_as_the_persona_says_it(limit, shown):
    text = rendered({"tasks": [{"body": "年末調整の書類を提出📄", "limit_date": limit, "status": "open"}]})
    assert shown in text and "状態: 未完了" in text
    assert not ISO.search(text) and "open" not in text


def test_a_done_task_and_the_goals_states_are_said_in_japanese():
    text = rendered(
        {
            "tasks": [{"body": "忘年会の会場予約", "limit_date": "2026-12-25", "status": "done"}],
            "goals": [
                {
                    "title": "来期の売上目標を決める",
                    "progress": 40,
                    "deadline": "2027-03-31",
                    "status": "active",
                },
                {"title": "資格の勉強", "progress": 0, "deadline": None, "status": "draft"},
            ],
        }
    )
    assert "期限: 12月25日（金）、状態: 完了" in text
    assert "来期の売上目標を決める: 40%（期限: 2027年3月31日（水）、進行中）" in text
    assert "資格の勉強: 0%（期限: 未定、設定中）" in text
    assert not ISO.search(text) and "active" not in text and "draft" not in text


def test_the_day_is_the_japanese_day_with_its_weekday():
    # Monday 15:40 UTC is Tuesday 0:40 in Tokyo: 「来週」 and 「明日」 are read from Tuesday
    assert "2026年12月29日（火）0時40分（日本時間）" in rendered({})


def test_a_value_that_is_not_a_date_is_shown_as_it_was_written():
    text = rendered({"tasks": [{"body": "見積書", "limit_date": "月末", "status": "in_review"}]})
    assert "期限: 月末、状態: in_review" in text


@pytest.mark.parametrize("source", [s.name for s in default_sources()])
def test_a_source_that_could_not_be_read_is_named_as_its_section(source):
    notice = rendered({}, degraded=[source]).split("【注意】")[1]
    assert f"取得できなかった情報: {SOURCE_LABELS[source]}。" in notice and source not in notice


@pytest.mark.parametrize(
    ("session", "shown"),
    [
        (
            {"mode": "normal", "last_intent": "text_response"},
            ["セッションモード: 通常", "直前の応答: 返答した"],
        ),
        (
            {"mode": "confirmation_pending", "last_intent": "tool_call"},
            ["セッションモード: 確認待ち", "直前の応答: 操作を提案した"],
        ),
        (
            {"mode": "multi_step_flow", "last_intent": "clarification_needed"},
            ["複数の手順の途中", "聞き返した"],
        ),
        ({"mode": "error_recovery"}, ["セッションモード: エラーからの立て直し中"]),
        ({}, ["セッションモード: 通常"]),
    ],
)
def test_the_conversations_state_is_said_in_japanese(session, shown):
    text = rendered({"session": session})
    assert all(line in text for line in shown), text
    assert not re.search(
        r"normal|confirmation_pending|multi_step_flow|error_recovery|text_response|tool_call", text
    )


@pytest.mark.parametrize(
    ("tool", "shown"),
    [
        ("view_team_tasks", "直前の操作: チームのタスクの確認〔view_team_tasks〕"),
        ("chatwork_task_create", None),  # whatever the catalogue calls it, beside the id
        ("kintai_export_v2", "直前の操作: kintai_export_v2"),  # an organisation's skill: the id alone
    ],
)
def test_the_last_operation_is_named_as_the_replies_name_it_beside_the_id_the_model_calls(tool, shown):
    text = rendered({"session": {"mode": "normal", "last_tool_called": tool}})
    names = {e.name: e.display_name for e in read_catalogue().tools}
    expected = shown or f"直前の操作: {names[tool]}〔{tool}〕"
    assert expected in text, text
    assert "直前のツール" not in text


def test_a_tasks_state_is_the_word_the_task_tools_show_for_it_and_they_agree():
    entries = [e for e in read_catalogue().tools if "status" in e.value_display]
    assert len(entries) >= 2  # the team view and the task search both take a status
    for value in ("open", "done"):
        words = {e.value_display["status"][value] for e in entries}
        assert len(words) == 1, f"the task tools say {value!r} differently: {words}"
        (word,) = words
        assert tool_words().task_status[value] == word
        text = rendered({"tasks": [{"body": "月曜の朝会の資料", "limit_date": None, "status": value}]})
        assert f"状態: {word}）" in text


def test_another_catalogue_says_a_tasks_state_in_its_own_words(tmp_path):
    raw = TOOLS_FILE.read_text(encoding="utf-8").replace('"open": "未完了"', '"open": "まだ"')
    assert '"まだ"' in raw
    other = tmp_path / "tools.json"
    other.write_text(raw, encoding="utf-8")
    before = config_files.current()
    config_files.configure(config_files.ConfigFiles(tools=other))
    try:
        text = rendered({"tasks": [{"body": "稟議書の回覧", "limit_date": None, "status": "open"}]})
    finally:
        config_files.configure(before)
    assert "状態: まだ）" in text
    assert "状態: 未完了）" in rendered({"tasks": [{"body": "稟議書の回覧", "status": "open"}]})


def test_a_department_is_named_as_people_say_it_beside_the_id_the_team_views_take():
    text = rendered(
        {
            "user": {"user_id": "u1", "name": "鈴木一郎", "department_id": "d-sales"},
            "persons": [
                {"name": "山田次郎", "user_id": "u-yamada", "department_id": "d-dev"},
                {"name": "外部 花子", "user_id": "u-x", "department_id": "d-9f3"},  # no name in the directory
                {"name": "新人さん", "user_id": "u-new", "department_id": None},
            ],
            "departments": {"d-sales": "営業部", "d-dev": "開発部"},
        }
    )
    assert "部署: 営業部〔d-sales〕" in text
    assert "- 山田次郎（部署: 開発部〔d-dev〕、ID: u-yamada）" in text
    assert "- 外部 花子（部署: d-9f3、ID: u-x）" in text and "- 新人さん（部署: -、ID: u-new）" in text


def test_the_builder_names_the_departments_and_the_record_keeps_the_peoples():

    store = MemoryStore()
    seed_directory(
        store,
        "acme",
        [
            {"user_id": "u1", "name": "鈴木一郎", "level": 2, "department_id": "d-sales"},
            {"user_id": "u2", "name": "田中太郎", "level": 2, "department_id": "d-sales"},
            {"user_id": "u3", "name": "山田次郎", "level": 4, "department_id": "d-dev"},
        ],
        {"d-hq": None, "d-sales": "d-hq", "d-dev": "d-hq"},
        {"d-sales": "営業部", "d-dev": "開発部"},
    )

    built = ContextBuilder().build(
        context_input(store, "開発部のタスクってどうなってる？", org="acme", user="u1")
    )
    assert built.records["departments"].status == "ok" and built.degraded == []
    assert "部署: 営業部〔d-sales〕" in built.rendered and "山田次郎（部署: 開発部〔d-dev〕" in built.rendered
    # AND a turn rendered again from its record names its people's departments (and the speaker's,
    # through a colleague of the same department)
    section = ContextSection()
    record(section, built, user_id="u1", user_name="鈴木一郎")
    again = render_recorded(section, now=NOW, user_id="u1", user_name="鈴木一郎")
    assert "開発部〔d-dev〕" in again and "部署: 営業部〔d-sales〕" in again
