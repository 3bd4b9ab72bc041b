"""``charter route "TEXT" [--local-only] [--json]``: the decision printed, no turn run, no classifier."""

from __future__ import annotations

import io
import json

from shared_lib.cli import main
from shared_lib.routing.config import ROUTING_FILE


def route_json(capsys, *argv: str) -> dict:
    assert main(["route", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_given_a_code_block_when_routed_as_json_then_the_rule_decides_code(capsys):
    # WHEN
    out = route_json(capsys, "直して\n```python\nprint(1/0)\n```")
    # THEN
    assert (out["primary_route"], out["source"], out["confidence"], out["rule_id"]) == (
        "CODE",
        "rules",
        1.0,
        "code.fenced_block",
    )
    assert out["evidence"] == ["```python"] and out["flags"]["local_only"] is False


def test_given_an_undecided_text_then_chat_without_a_classifier(capsys):
    out = route_json(capsys, "最近ちょっと疲れてるんだよね")
    assert (out["primary_route"], out["source"], out["reason"]) == (
        "CHAT",
        "fallback",
        "no classifier configured",
    )
    assert out["flags"]["classifier_called"] is False and out["flags"]["classifier_route"] is None


def test_given_local_only_and_a_code_command_then_the_refusal_is_printed(capsys):
    out = route_json(capsys, "/code ログイン画面", "--local-only")
    assert (out["primary_route"], out["flags"]["refused"], out["guidance"]) == (
        "CHAT",
        "code_needs_cloud",
        "route.code_local_only",
    )
    assert out["flags"]["local_only"] is True


def test_given_a_text_when_routed_then_the_text_form_names_every_field(capsys):
    assert main(["route", "/local サーバーを再起動したい"]) == 0
    out = capsys.readouterr().out
    for line in (
        "primary_route      OPS",
        "source             rules",
        "rule_id            ops.server_restart",
        "local_only         yes",
        "classifier_called  no",
        "commands           /local",
    ):
        assert line in out


def test_given_dash_then_the_text_comes_from_stdin(capsys, monkeypatch):
    monkeypatch.setattr(
        "sys.stdin", io.StringIO('Traceback (most recent call last):\n  File "a.py", line 1\n')
    )
    assert route_json(capsys, "-")["rule_id"] == "code.stack_trace"


def test_given_an_empty_text_then_usage_exit_two(capsys):
    assert main(["route", "   "]) == 2
    assert "empty" in capsys.readouterr().err


def test_given_a_broken_routing_file_then_exit_two_as_any_bad_input(capsys, tmp_path):
    data = json.loads(ROUTING_FILE.read_text(encoding="utf-8"))
    data["rules"][0]["route"] = "SUMMARIZE"
    path = tmp_path / "routing.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert main(["route", "こんにちは", "--config", str(path)]) == 2
    assert "rules.0.route" in capsys.readouterr().err
