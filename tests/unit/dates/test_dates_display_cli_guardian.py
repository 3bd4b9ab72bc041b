"""Display of readings, ``charter dates parse``, and the guardian seeing what the reader reads."""

from __future__ import annotations

import json
from datetime import date, datetime, time

import pytest

from shared_lib.brain.legacy_params import extract
from shared_lib.cli import main
from shared_lib.dates import JST, display_date, display_reading, display_time, find, read
from shared_lib.policy.guardian import evaluate
from shared_lib.policy.values import is_calendar_date_text, iso_date_text, read_date
from shared_lib.tools.normalize import normalize_deadline
from shared_lib.wiring.features import tool_registry
from tests.unit.policy.policy_fakes import tool_call

NOW = datetime(2026, 11, 24, 10, 0, tzinfo=JST)  # a Tuesday morning in Tokyo


@pytest.mark.parametrize(
    ("day", "weekday", "expected"),
    [
        (date(2026, 11, 25), True, "11月25日（水）"),
        (date(2026, 11, 20), True, "11月20日（金）"),
        (date(2026, 11, 29), True, "11月29日（日）"),
        (date(2026, 1, 5), False, "1月5日"),
    ],
)
def test_a_date_is_shown_in_japanese_with_full_width_parentheses(day, weekday, expected):
    assert display_date(day, with_weekday=weekday) == expected


def test_the_year_is_shown_only_when_it_is_not_this_year():
    assert display_date(date(2027, 1, 5), today=date(2026, 12, 31)) == "2027年1月5日（火）"
    assert display_date(date(2026, 12, 5), today=date(2026, 12, 31)) == "12月5日（土）"


@pytest.mark.parametrize(
    ("at", "expected"), [(time(15, 30), "15時30分"), (time(15, 0), "15時"), (time(9, 5), "9時5分")]
)
def test_a_time_is_shown_in_japanese(at, expected):
    assert display_time(at) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("来週金曜の午後3時半", "12月4日（金）15時30分"),
        ("12/5〜12/7", "12月5日（土）〜12月7日（月）"),
        ("3時", "15時"),
        ("1/5", "2027年1月5日（火）"),
    ],
)
def test_a_reading_is_shown_whole(text, expected):
    reading = read(text, NOW)
    assert reading is not None
    assert display_reading(reading, today=NOW.date()) == expected


def test_find_gives_the_first_date_expression_as_written_without_a_clock():
    assert find("田中さんに見積書を１２月５日（土）までに") == "１２月５日（土）"
    assert find("明日の件") == "明日"
    assert find("よろしく") is None


def test_the_legacy_brain_takes_its_dates_from_the_reader():
    spec = tool_registry().get("chatwork_task_create")
    params, _ = extract(spec, "田中さんに請求書の確認を来週金曜までにお願い")
    assert params["limit_date"] == "来週金曜" and params["body"] == "請求書の確認"
    params, _ = extract(spec, "田中さんに請求書の確認を週明けまでにお願い")
    assert params["limit_date"] == "週明け" and params["body"] == "請求書の確認"
    # a time said as a deadline is the deadline, not a part of the task (it was 「17時までに資料送付」)
    params, _ = extract(spec, "山田さんに17時までに資料送付のタスクお願い")
    assert params["limit_date"] == "17時" and params["body"] == "資料送付", params
    assert find("15時に会議室で打ち合わせ") is None  # a time that is no deadline is not one


def test_the_guardian_values_read_whole_values_with_the_reader():
    today = NOW.date()
    assert read_date("来週金曜", today) == date(2026, 12, 4)
    assert read_date("月末", today) == date(2026, 11, 30)
    assert read_date("12/5", today) == date(2026, 12, 5)
    assert read_date("11/20", today) == date(2027, 11, 20)  # the next one (the guardian asks)
    assert read_date("11/20(金)", today) == date(2026, 11, 20)  # the weekday pins the past one
    assert read_date("今週末", today) == date(2026, 11, 27)  # a weekend deadline is due Friday
    assert read_date("そのうち", today) is None
    assert read_date("2026-12-05T10:00:00+09:00", today) == date(2026, 12, 5)
    assert read_date("明日の件", today) is None
    assert iso_date_text("２０２６年１２月５日") == "2026-12-05"
    assert iso_date_text("12/5") is None  # a year-less date stays as said
    assert is_calendar_date_text("2/30") and is_calendar_date_text("2026-02-30")
    assert not is_calendar_date_text("いつか")


def test_given_a_task_due_11_20_proposed_on_11_24_then_the_guardian_confirms_the_next_year_reading():
    # GIVEN a task proposal whose deadline, without a year, passed four days ago
    proposal = tool_call(
        "chatwork_task_create", {"body": "見積書作成", "assignee_name": "田中", "limit_date": "11/20"}
    )
    # WHEN the guardian judges it on 2026-11-24
    verdict = evaluate(proposal, registry=tool_registry(), now=NOW)
    # THEN it is read as next year's, and that doubtful reading is asked about with the year shown
    assert (verdict.action, verdict.reason_code) == ("confirm", "date.ambiguous")
    assert "2027年11月20日（土）" in verdict.message and verdict.message.endswith("ウル？")
    assert verdict.details["date"] == "2027-11-20" and verdict.details["doubt"] == "next_year"


def test_given_a_task_due_11_20_with_its_friday_then_the_guardian_confirms_the_past_date():
    proposal = tool_call(
        "chatwork_task_create", {"body": "見積書作成", "assignee_name": "田中", "limit_date": "11/20（金）"}
    )
    verdict = evaluate(proposal, registry=tool_registry(), now=NOW)
    assert (verdict.action, verdict.reason_code) == ("confirm", "date.past")
    assert "11月20日（金）" in verdict.message
    assert verdict.details["date"] == "2026-11-20"
    assert not verdict.modified_parameters


@pytest.mark.parametrize(
    ("said", "code"), [("来週金曜", "pass"), ("月末", "pass"), ("先週金曜", "date.past")]
)
def test_the_guardian_checks_relative_expressions_it_used_to_skip(said, code):
    proposal = tool_call("create_event", {"date": said})
    verdict = evaluate(proposal, registry=tool_registry(), now=NOW)
    assert verdict.reason_code == code


@pytest.mark.parametrize(
    ("said", "day"),
    [
        ("来年1月5日", "2027-01-05"),
        ("来年の1/5", "2027-01-05"),
        ("1週間以内", "2026-12-01"),
        ("3営業日以内", "2026-11-27"),
        ("三日以内にお願いします", "2026-11-27"),
        ("来週前半", "2026-12-02"),
        ("来週月〜水で", "2026-12-02"),
        ("一両日中", "2026-11-25"),
        ("連休明けまでに", "2027-01-04"),
        ("12.10", "2026-12-10"),
        ("金曜までだと助かります", "2026-11-27"),
    ],
)
def test_a_deadline_said_with_its_year_word_or_as_a_span_passes_the_guardian_and_is_the_day_it_means(
    said, day
):
    # GIVEN a task whose deadline is said as office workers say it (Tuesday 11/24, Tokyo)
    proposal = tool_call(
        "chatwork_task_create", {"body": "年始の挨拶状", "assignee_name": "田中", "limit_date": said}
    )
    # WHEN the guardian judges it THEN nothing is asked, and the executor's reading is that day
    assert evaluate(proposal, registry=tool_registry(), now=NOW).reason_code == "pass"
    assert normalize_deadline(said, NOW) == (day, None)


def test_a_deadline_said_as_a_time_alone_is_today_while_that_time_is_ahead():
    # GIVEN 「17時までに」 said on a Tuesday at 10:00 THEN today 17:00, and nothing is asked
    proposal = tool_call(
        "chatwork_task_create", {"body": "日報", "assignee_name": "田中", "limit_date": "17時まで"}
    )
    assert evaluate(proposal, registry=tool_registry(), now=NOW).reason_code == "pass"
    assert normalize_deadline("17時まで", NOW) == ("2026-11-24", "17:00")
    # BUT said at 19:00 the time is past: which day is asked, not guessed
    evening = NOW.replace(hour=19)
    assert evaluate(proposal, registry=tool_registry(), now=evening).reason_code == "date.unreadable"


def test_a_deadline_of_two_days_or_a_bare_week_is_asked_for_not_guessed():
    for said in ("明日か明後日", "来週"):
        proposal = tool_call(
            "chatwork_task_create", {"body": "議事録まとめ", "assignee_name": "田中", "limit_date": said}
        )
        verdict = evaluate(proposal, registry=tool_registry(), now=NOW)
        assert verdict.reason_code == "date.unreadable", (said, verdict)


def test_a_year_word_date_with_the_wrong_weekday_is_asked_about():
    proposal = tool_call(
        "chatwork_task_create",
        {"body": "年始の挨拶状", "assignee_name": "田中", "limit_date": "来年1月5日(水)"},
    )
    verdict = evaluate(proposal, registry=tool_registry(), now=NOW)
    assert verdict.action == "confirm" and "1月5日（火）" in verdict.message, verdict


def test_cli_prints_the_reading_as_json(capsys):
    assert main(["dates", "parse", "11/20までに", "--now", "2026-11-24T10:00", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out == {
        "date": "2027-11-20",
        "time": None,
        "end_date": None,
        "deadline": "2027-11-20",
        "is_past": False,
        "ambiguous": True,
        "ambiguity": "11月20日は過ぎたばかりのため次の2027年11月20日と読みました",
        "doubt": "next_year",
        "expression": "11/20",
        "kind": "absolute",
        "display": "2027年11月20日（土）",
        "deadline_display": "2027年11月20日（土）",
    }


def test_cli_shows_a_weekend_as_a_range_and_its_deadline_apart(capsys):
    assert main(["dates", "parse", "今週末までに", "--now", "2026-11-24T10:00", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["date"], out["end_date"], out["deadline"]) == ("2026-11-28", "2026-11-29", "2026-11-27")
    assert out["display"] == "11月28日（土）〜11月29日（日）"
    assert out["deadline_display"] == "11月27日（金）"


def test_cli_prints_aligned_lines_with_the_display_form(capsys):
    assert main(["dates", "parse", "3時半", "--now", "2026-11-24T01:00:00+00:00"]) == 0
    out = capsys.readouterr().out
    for line in ("date        null", "time        15:30", "ambiguous   yes", "display     15時30分"):
        assert line in out


def test_cli_exit_codes_tell_not_read_from_bad_usage(capsys):
    assert main(["dates", "parse", "よろしく", "--now", "2026-11-24T10:00"]) == 1
    assert main(["dates", "parse", "2/30", "--now", "2026-11-24T10:00", "--json"]) == 1
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["code"] == "date.nonexistent"
    assert main(["dates", "parse", "明日の件", "--now", "2026-11-24T10:00", "--whole"]) == 1
    assert main(["dates", "parse", "明日", "--now", "yesterday"]) == 2
    assert main(["dates", "parse", "明日", "--now", "2026-11-24T10:00", "--tz", "Mars/Olympus"]) == 2
