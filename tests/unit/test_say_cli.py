"""``charter say``: one message through the in-process product, as a developer or an operator
tries a sentence without a stack (issue 34 deliverable 8)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infra import cli
from shared_lib.adapters.sqlite_store import SQLiteStore
from shared_lib.demo_data import DEMO_ORG, DEMO_USER


def say(capsys: pytest.CaptureFixture[str], keep: Path, *words: str) -> tuple[int, dict]:
    code = cli.main(["say", "--keep", str(keep), "--json", *words])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else {}


def test_a_confirmation_left_by_one_say_is_answered_by_the_next(tmp_path, capsys):
    keep = tmp_path / "demo"
    # GIVEN nothing kept yet: say makes the embedded store with the demo's directory
    # WHEN a level-6 person asks for an announcement to everyone
    code, first = say(
        capsys, keep, "--as", DEMO_USER, "全員に、明日の全体会議は10時からってアナウンスしといて🙏"
    )
    # THEN the product asks first (a dangerous operation), and shows nothing internal
    assert code == 0, first
    assert first["turn"]["guardian"]["action"] == "confirm"
    assert first["leaks"] == []
    # WHEN the same person says 「はい」 in the same room, to the first and the second confirmation
    code, again = say(capsys, keep, "--as", DEMO_USER, "はい")
    assert code == 0 and again["turn"]["guardian"]["action"] == "confirm", again
    code, second = say(capsys, keep, "--as", DEMO_USER, "はい")
    # THEN the pending announcement is sent
    assert code == 0, second
    assert second["turn"]["execution_success"] is True
    assert second["leaks"] == []
    # AND both turns are in the kept store for the operator commands
    store = SQLiteStore(keep / "demo.sqlite")
    for turn in (first["turn"], second["turn"]):
        assert store.get(f"orgs/{DEMO_ORG}/observability/{turn['turn_id']}") is not None


def test_a_persons_own_number_comes_back_to_them_and_is_no_leak(tmp_path, capsys):
    keep = tmp_path / "demo"
    # WHEN a person asks the assistant to keep their own phone number
    code, out = say(capsys, keep, "--as", "u-suzuki", "私の携帯番号は090-1234-5678だから覚えておいて")
    # THEN the reply they read gives it back as they wrote it (their own value), and nothing leaks
    assert code == 0 and out["leaks"] == [], out
    assert "090-1234-5678" in out["turn"]["reply"] and "[PHONE" not in out["turn"]["reply"]
    # AND the turn's record, a log, keeps it masked
    record = SQLiteStore(keep / "demo.sqlite").get(f"orgs/{DEMO_ORG}/observability/{out['turn']['turn_id']}")
    assert record is not None and "090-1234-5678" not in json.dumps(record, ensure_ascii=False, default=str)


def test_now_sets_the_products_clock(tmp_path, capsys):
    keep = tmp_path / "demo"
    # WHEN a task 「明日まで」 is asked on New Year's Eve morning (JST)
    code, out = say(
        capsys,
        keep,
        "--as",
        DEMO_USER,
        "--now",
        "2026-12-31T10:00:00+09:00",
        "田中さんに明日までに見積書を作成するタスクをお願いできる？",
    )
    # THEN the deadline is New Year's Day of the next year, shown as a person reads it
    assert code == 0, out
    assert "1月1日（金）" in out["turn"]["reply"], out["turn"]["reply"]
    # AND the record was written at that moment
    record = SQLiteStore(keep / "demo.sqlite").get(f"orgs/{DEMO_ORG}/observability/{out['turn']['turn_id']}")
    assert record is not None and str(record["recorded_at"]).startswith("2026-12-31 01:0")


@pytest.mark.parametrize(
    "words",
    [
        ["--as", DEMO_USER, "   "],  # nothing to say
        ["--as", DEMO_USER, "--now", "来週の月曜", "hi"],  # not an ISO moment
        ["--as", DEMO_USER, "--store", "memory", "hi"],  # a store that keeps nothing
        ["hi"],  # no speaker
    ],
)
def test_bad_input_is_2(tmp_path, capsys, words):
    with pytest.raises(SystemExit) as stopped:
        code = cli.main(["say", "--keep", str(tmp_path / "demo"), *words])
        raise SystemExit(code)
    assert stopped.value.code == 2
