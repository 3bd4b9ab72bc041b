"""The in-process demo (``charter demo``) through every layer with the scripted model: every
reply is there and none shows a mask placeholder, an internal tool or parameter name or an
ISO date (issue 18's leak test, over the demo)."""

from __future__ import annotations

import argparse
import json

import pytest

from infra import demo_cli
from shared_lib.demo_data import CONVERSATION


def test_leaks_names_each_thing_a_user_must_not_read():
    assert demo_cli.leaks("「アナウンスの送信」を11月25日（水）に送ったウル🐺") == []
    assert demo_cli.leaks("電話は[PHONE_1]、メールは[EMAIL]ウル") == ["[PHONE_1]", "[EMAIL]"]
    assert demo_cli.leaks("announceは注意が必要です") == ["announce"]
    assert demo_cli.leaks("assignee_name、limit_dateを教えて") == ["assignee_name", "limit_date"]
    assert demo_cli.leaks("期限は2026-11-25ウル") == ["2026-11-25"]


def test_every_demo_reply_is_there_and_leaks_nothing(tmp_path, capsys: pytest.CaptureFixture[str]):
    # WHEN the embedded demo runs with the built-in scripted model
    turns = demo_cli._embedded(argparse.Namespace(keep=str(tmp_path / "demo"), json=True, stack=False))
    printed = json.loads(capsys.readouterr().out)
    # THEN every turn has a reply, and no reply shows what a user must never read
    assert len(turns) == len(CONVERSATION) == len(printed["turns"])
    assert all(t["reply"] for t in turns), [t["turn_id"] for t in turns if not t["reply"]]
    assert {t["turn_id"]: demo_cli.leaks(t["reply"]) for t in turns if demo_cli.leaks(t["reply"])} == {}
    # AND the replies the issue quoted read in Japanese now
    replies = "\n".join(t["reply"] for t in turns)
    assert "「アナウンスの送信」は注意が必要な操作ウル" in replies and "「好み」" in replies
    assert "「権限の変更」は自動では実行できない操作ウル" in replies
