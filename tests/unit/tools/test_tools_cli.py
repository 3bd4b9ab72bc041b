"""``charter tools list [--json]`` and ``charter tools check``."""

from __future__ import annotations

import json

from shared_lib.cli import main
from shared_lib.wiring.features import tool_registry


def test_given_the_registry_when_listed_as_json_then_every_tool_has_its_definition_level_danger_enabled(
    capsys,
):
    assert main(["tools", "list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == tool_registry().names()
    by_name = {r["name"]: r for r in rows}
    assert by_name["change_permission"]["min_level"] == 6
    assert (by_name["change_permission"]["danger"], by_name["change_permission"]["danger_action"]) == (
        "high",
        "block",
    )
    assert by_name["send_to_all"]["enabled"] is True
    for row in rows:
        assert {"name", "description", "input_schema", "min_level", "danger", "enabled"} <= set(row)
        assert row["input_schema"]["type"] == "object" and row["schema_valid"]


def test_given_the_registry_when_listed_as_text_then_each_tool_shows_its_facts_and_schema(capsys):
    assert main(["tools", "list"]) == 0
    out = capsys.readouterr().out
    assert "view_all_users  level>=5  danger=none  enabled=yes" in out
    assert "change_permission  level>=6  danger=high/block" in out
    assert '"required": [' in out and "【使用例】" in out


def test_given_the_builtin_registry_when_checked_then_the_exit_code_is_zero(capsys):
    assert main(["tools", "check"]) == 0
    assert "21 tools, 0 problem(s)" in capsys.readouterr().out


def test_given_no_subcommand_when_run_then_usage_and_exit_code_two(capsys):
    assert main(["tools"]) == 2
