"""One exit-code convention over every ``charter`` command (``shared_lib.cli.runner``).

0 ok; 1 a finding (a gate that fails, a record that is not there, a check that finds a
problem); 2 bad input or configuration (usage, a file that does not parse, no store).
The test walks the whole parser (product and developer commands): ``COMMANDS`` must name
every leaf, so a command added without a row here fails ``test_every_command_has_a_row``.
"""

from __future__ import annotations

import io
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from infra import cli
from shared_lib.cli import runner
from tests.unit.policy.test_policy_simulator_cli import USER, text


@dataclass(frozen=True)
class Row:
    """How one command is held to the convention. An argv is a list of words where ``{store}``
    is the demo's SQLite store, ``{bad}`` a file that is not JSON (nor SQLite) and ``{tmp}`` an
    empty folder; ``None`` says the case does not apply, and ``why`` says why for a reader."""

    no_store: list[str] | None = None  # run with no store configured: exit 2, one line
    bad: list[str] | None = None  # a bad file: exit 2, no traceback
    finding: list[str] | None = None  # exit 1 over the demo's store
    ok: list[str] | None = None  # exit 0 over the demo's store
    why: str = ""


S = ["--store", "{store}"]
HB = ["heartbeat", "add", "--org", "demo", "--user", "u-suzuki", "--room", "r1"]
COMMANDS: dict[str, Row] = {
    "demo": Row(
        bad=["demo", "--keep", "{bad}"],
        why="embedded, it makes its own store; the fixture runs it (ok); --stack needs the stack",
    ),
    "say": Row(
        bad=["say", "--as", "u-suzuki", "--store", "{bad}", "hi"],
        ok=["say", "--as", "u-suzuki", "--store", "{store}", "--json", "こんにちは"],
        why="one message in-process; its conversation flow is test_say_cli",
    ),
    "local up": Row(why="starts the stack: its failure path is test_local_up_failure_*, the run is e2e"),
    "local status": Row(finding=["local", "status"], why="no stack is running in the unit tests"),
    "local restart": Row(finding=["local", "restart", "ingress"], why="no stack: nothing to restart"),
    "local down": Row(ok=["local", "down"]),
    "eval run": Row(
        bad=["eval", "run", "--dataset", "{bad}"],
        ok=["eval", "run", "--brain", "legacy", "--limit", "1", "--json"],
    ),
    "eval check": Row(bad=["eval", "check", "--dataset", "{bad}"], ok=["eval", "check", "--json"]),
    "policy check": Row(
        bad=["policy", "check", "--policy", "{bad}"], ok=["policy", "check"], why="stdin: a valid case"
    ),
    "policy validate": Row(bad=["policy", "validate", "{bad}"], ok=["policy", "validate"]),
    "tools list": Row(ok=["tools", "list", "--json"], why="reads the packaged registry only"),
    "tools check": Row(ok=["tools", "check"], why="the packaged registry has no problem"),
    "flags validate": Row(bad=["flags", "validate", "{bad}"], ok=["flags", "validate"]),
    "flags stage": Row(
        bad=["flags", "stage", "--env", "dev", "--dir", "{tmp}"], ok=["flags", "stage", "--env", "dev"]
    ),
    "flags promote": Row(bad=["flags", "promote", "--env", "dev", "--dir", "{tmp}", "--dry-run"]),
    "flags explain": Row(
        bad=["flags", "explain", "--flags", "{bad}", "--org", "o", "--user", "u"],
        finding=["flags", "explain", "--org", "demo", "--user", "u", *S],
        why="no store: the repository's file, said on stderr (documented); the demo's store has no live flags",
    ),
    "flags show": Row(
        bad=["flags", "show", "--store", "{bad}"],
        finding=["flags", "show", *S],
        why="no store: the repository's file, said on stderr (documented)",
    ),
    "flags seed": Row(no_store=["flags", "seed"], bad=["flags", "seed", "{bad}", *S]),
    "flags override": Row(
        no_store=[
            "flags",
            "override",
            "--ttl",
            "1h",
            "--author",
            "a",
            "--reason",
            "r",
            "--kill-switch",
            "on",
        ],
        bad=["flags", "override", "--ttl", "1h", "--author", "a", "--reason", "r", "--kill-switch", "maybe"],
    ),
    "flags clear-override": Row(no_store=["flags", "clear-override", "--author", "a", "--reason", "r"]),
    "shadow report": Row(
        no_store=["shadow", "report"],
        bad=["shadow", "report", "--criteria", "{bad}", *S],
        finding=["shadow", "report", "--fail-on-hold", *S],
        ok=["shadow", "report", *S],
    ),
    "shadow compare": Row(
        no_store=["shadow", "compare", "T", "--org", "demo"],
        bad=["shadow", "compare", "T", "--org", "demo", "--store", "{bad}"],
        finding=["shadow", "compare", "NO-SUCH-TURN", "--org", "demo", *S],
    ),
    "guard status": Row(no_store=["guard", "status"], ok=["guard", "status", *S]),
    "guard explain": Row(no_store=["guard", "explain"], ok=["guard", "explain", *S]),
    "gate shadow": Row(no_store=["gate", "shadow"], bad=["gate", "shadow", "--store", "{bad}"]),
    "gate canary": Row(no_store=["gate", "canary"], bad=["gate", "canary", "--store", "{bad}"]),
    "gate promotion": Row(
        no_store=["gate", "promotion", "--env", "prod"],
        bad=["gate", "promotion", "--env", "prod", "--file", "{bad}"],
        why="no data in a window is 2 too (a gate never passes without evidence)",
    ),
    "turns list": Row(
        no_store=["turns", "list"], bad=["turns", "list", "--store", "{bad}"], ok=["turns", "list", *S]
    ),
    "turns show": Row(
        no_store=["turns", "show", "T"],
        bad=["turns", "show", "T", "--store", "{bad}"],
        finding=["turns", "show", "NO-SUCH-TURN", *S],
    ),
    "replay": Row(no_store=["replay", "T"], finding=["replay", "NO-SUCH-TURN", *S]),
    "audit constitution": Row(no_store=["audit", "constitution"], ok=["audit", "constitution", *S]),
    "cost": Row(no_store=["cost"], bad=["cost", "--day", "yesterday", *S], ok=["cost", *S]),
    "metrics": Row(no_store=["metrics"], bad=["metrics", "--store", "{bad}"], ok=["metrics", *S]),
    "alerts": Row(no_store=["alerts"], ok=["alerts", *S]),
    "llm-calls": Row(no_store=["llm-calls"], bad=["llm-calls", "--turn", "T", *S], ok=["llm-calls", *S]),
    "admin serve": Row(no_store=["admin", "serve"], why="serving blocks: ok is the dashboard's own tests"),
    "rollout rollback": Row(
        no_store=["rollout", "rollback", "--region", "r"],
        bad=["rollout", "rollback", "--shifted-at", "noon"],
        why="the check needs the Cloud Run Admin API (tests/unit/rollout/test_revision_rollback.py)",
    ),
    "data purge": Row(
        no_store=["data", "purge", "--org", "o", "--user", "u"],
        bad=["data", "purge", "--org", "o/x", "--user", "u", *S],
        ok=["data", "purge", "--org", "demo", "--user", "u-nobody", "--dry-run", *S],
    ),
    "route": Row(bad=["route", "x", "--config", "{bad}"], ok=["route", "こんにちは"]),
    "dates parse": Row(
        bad=["dates", "parse", "明日", "--now", "noon"],
        finding=["dates", "parse", "こんにちは", "--now", "2026-11-24T10:00"],
        ok=["dates", "parse", "明日", "--now", "2026-11-24T10:00"],
    ),
    "persona show": Row(
        no_store=["persona", "show", "--org", "demo"], ok=["persona", "show", "--org", "demo", "--json", *S]
    ),
    "persona verify": Row(
        bad=["persona", "verify", "--core", "{tmp}"],
        finding=["persona", "verify", "--core", "{bad}"],
        ok=["persona", "verify"],
    ),
    "persona diff": Row(
        no_store=["persona", "diff", "--org", "demo"],
        bad=["persona", "diff", "--core", "{tmp}"],
        finding=["persona", "diff", "--core", "{bad}"],
        ok=["persona", "diff", "--org", "demo", *S],
    ),
    "approvals list": Row(no_store=["approvals", "list"], ok=["approvals", "list", *S]),
    "approvals show": Row(
        no_store=["approvals", "show", "J-1", "--org", "demo"],
        finding=["approvals", "show", "J-NONE", "--org", "demo", *S],
    ),
    "approvals auto on": Row(no_store=["approvals", "auto", "on", "--org", "demo"]),
    "approvals auto off": Row(no_store=["approvals", "auto", "off", "--org", "demo"]),
    "approvals auto status": Row(
        no_store=["approvals", "auto", "status", "--org", "demo"],
        ok=["approvals", "auto", "status", "--org", "demo", *S],
    ),
    "episodes list": Row(
        no_store=["episodes", "list", "--org", "demo"],
        bad=["episodes", "list", "--org", "demo", "--day", "yesterday", *S],
        ok=["episodes", "list", "--org", "demo", "--json", *S],
    ),
    "episodes show": Row(
        no_store=["episodes", "show", "E-1", "--org", "demo"],
        bad=["episodes", "show", "E-1", "--org", "o/x", *S],
        finding=["episodes", "show", "E-NONE", "--org", "demo", *S],
        why="ok: tests/unit/memory/test_episodes_cli.py (the demo writes no episode)",
    ),
    "tags list": Row(
        no_store=["tags", "list", "--org", "demo"],
        bad=["tags", "list", "--org", "demo", "--store", "{bad}"],
        ok=["tags", "list", "--org", "demo", "--days", "7", *S],
    ),
    "tags search": Row(
        no_store=["tags", "search", "見積", "--org", "demo"],
        bad=["tags", "search", "見積", "--org", "demo", "--min-confidence", "2", *S],
        ok=["tags", "search", "見積", "--org", "demo", "--mode", "and", "--json", *S],
    ),
    "tags show": Row(
        no_store=["tags", "show", "見積", "--org", "demo"],
        bad=["tags", "show", "見積", "--org", "o/x", *S],
        finding=["tags", "show", "存在しないタグ名", "--org", "demo", *S],
        why="ok: tests/unit/memory/test_tag_cli.py (the demo's tags are whatever its turns gave)",
    ),
    "config show": Row(ok=["config", "show", "--json"], why="the settings need no store"),
    "peers list": Row(
        no_store=["peers", "list"],
        bad=["peers", "list", "--store", "{bad}"],
        ok=["peers", "list", "--json", *S],
        why="finding: --probe of an unhealthy peer (tests/unit/peers/test_peers_cli.py)",
    ),
    "memory add": Row(
        no_store=["memory", "add", "--org", "demo", "--kind", "knowledge", "手順"],
        bad=["memory", "add", "--org", "demo", "--kind", "knowledge", " ", *S],
        finding=["memory", "add", "--org", "demo", "--kind", "teaching", "--by", "u-yamada", "方針", *S],
        why="ok writes into the demo's store: tests/unit/cli/test_memory_cli.py adds to a store of its own",
    ),
    "memory import": Row(
        no_store=["memory", "import", "--org", "demo", "--kind", "knowledge", "{bad}"],
        bad=["memory", "import", "--org", "demo", "--kind", "knowledge", "{tmp}", *S],
        finding=["memory", "import", "--org", "demo", "--kind", "value", "--by", "u-tanaka", "{bad}", *S],
    ),
    "memory list": Row(
        no_store=["memory", "list", "--org", "demo"], ok=["memory", "list", "--org", "demo", *S]
    ),
    "memory delete": Row(
        no_store=["memory", "delete", "--org", "demo", "K-1"],
        bad=["memory", "delete", "--org", "demo", "X-1", *S],
        finding=["memory", "delete", "--org", "demo", "K-0000000000", *S],
    ),
    "memory reindex": Row(
        no_store=["memory", "reindex", "--org", "demo"],
        bad=["memory", "reindex", "--org", "demo", "--store", "{bad}"],
        why="ok writes into the demo's store: tests/unit/cli/test_memory_cli.py reindexes a store of its own",
    ),
    "memory check": Row(
        no_store=["memory", "check", "--org", "demo"],
        bad=["memory", "check", "--org", "demo", "--store", "{bad}"],
        ok=["memory", "check", "--org", "demo", "--json", *S],
        why="finding: tests/unit/cli/test_memory_check_cli.py breaks a store of its own (--repair writes)",
    ),
    "memory search": Row(
        no_store=["memory", "search", "--org", "demo", "経費"],
        bad=["memory", "search", "--org", "demo", "--as", "u-nobody", "経費", *S],
        ok=["memory", "search", "--org", "demo", "--json", "経費", *S],
    ),
    "ft list": Row(
        no_store=["ft", "list", "--org", "demo"], ok=["ft", "list", "--org", "demo", "--json", *S]
    ),
    "ft show": Row(
        no_store=["ft", "show", "--org", "demo", "t-1"],
        bad=["ft", "show", "--org", "demo", "a/b", *S],
        finding=["ft", "show", "--org", "demo", "t-none", *S],
        why="ok: tests/unit/cli/test_ft_cli.py shows a candidate of a store of its own",
    ),
    "ft accept": Row(
        no_store=["ft", "accept", "--org", "demo", "--by", "u-kazu", "t-1"],
        bad=["ft", "accept", "--org", "demo", "--by", "u-kazu", "a/b", *S],
        finding=["ft", "accept", "--org", "demo", "--by", "u-tanaka", "t-none", *S],
        why="ok writes a review: tests/unit/cli/test_ft_cli.py reviews in a store of its own",
    ),
    "ft edit": Row(
        no_store=["ft", "edit", "--org", "demo", "--by", "u-kazu", "--reply", "はい", "t-1"],
        bad=["ft", "edit", "--org", "demo", "--by", "u-kazu", "--file", "{bad}", "t-1", *S],
        finding=["ft", "edit", "--org", "demo", "--by", "u-tanaka", "--reply", "はい", "t-none", *S],
        why="ok writes a review: tests/unit/cli/test_ft_cli.py edits in a store of its own",
    ),
    "ft reject": Row(
        no_store=["ft", "reject", "--org", "demo", "--by", "u-kazu", "--reason", "r", "t-1"],
        bad=["ft", "reject", "--org", "demo", "--by", "u-kazu", "--reason", " ", "t-none", *S],
        finding=["ft", "reject", "--org", "demo", "--by", "u-kazu", "--reason", "r", "t-none", *S],
        why="ok writes a review: tests/unit/cli/test_ft_cli.py rejects in a store of its own",
    ),
    "ft export": Row(
        no_store=["ft", "export", "--org", "demo", "--format", "openai", "--out", "ft.jsonl"],
        bad=["ft", "export", "--org", "demo", "--format", "openai", "--out", "{tmp}", *S],
        finding=["ft", "export", "--org", "demo", "--format", "openai", "--out", "ft-none.jsonl", *S],
        why="the demo's candidates are unreviewed (nothing to export); ok: tests/unit/cli/test_ft_cli.py",
    ),
    "ft staging": Row(
        no_store=["ft", "staging", "--org", "demo"],
        bad=["ft", "staging", "--org", "demo", "--store", "{bad}"],
        finding=["ft", "staging", "--org", "demo", "off", "--by", "u-suzuki", *S],
        ok=["ft", "staging", "--org", "demo", *S],
        why="u-suzuki is level 2 (turning it on or off needs 6)",
    ),
    "skills list": Row(
        no_store=["skills", "list", "--org", "demo"],
        bad=["skills", "list", "--org", "demo", "--store", "{bad}"],
        ok=["skills", "list", "--org", "demo", "--json", *S],
    ),
    "skills show": Row(
        no_store=["skills", "show", "--org", "demo", "add_numbers"],
        bad=["skills", "show", "--org", "demo", "add_numbers", "--store", "{bad}"],
        finding=["skills", "show", "--org", "demo", "add_numbers", *S],
        why="ok: tests/unit/skills/test_skills_cli.py (the demo has no skill)",
    ),
    "skills test": Row(
        no_store=["skills", "test", "--org", "demo", "add_numbers"],
        bad=["skills", "test", "--org", "demo", "add_numbers", "--store", "{bad}"],
        finding=["skills", "test", "--org", "demo", "add_numbers", *S],
        why="ok and a failing example: tests/unit/skills/test_skills_cli.py (the demo has no skill)",
    ),
    "skills approve": Row(
        no_store=["skills", "approve", "--org", "demo", "add_numbers", "--version", "1", "--by", "u-yamada"],
        bad=["skills", "approve", "--org", "demo", "add_numbers", "--version", "x", "--by", "u-yamada"],
        finding=[
            "skills",
            "approve",
            "--org",
            "demo",
            "add_numbers",
            "--version",
            "1",
            "--by",
            "u-yamada",
            *S,
        ],
        why="ok: tests/unit/skills/test_skills_cli.py approves a tested skill of its own store",
    ),
    "skills rollback": Row(
        no_store=["skills", "rollback", "--org", "demo", "add_numbers", "--by", "u-yamada"],
        bad=["skills", "rollback", "--org", "demo", "add_numbers", "--by", "u-yamada", "--store", "{bad}"],
        finding=["skills", "rollback", "--org", "demo", "add_numbers", "--by", "u-yamada", *S],
        why="ok: tests/unit/skills/test_skills_cli.py rolls back in a store of its own",
    ),
    "skills propose": Row(
        no_store=["skills", "propose", "--org", "demo", "--file", "{bad}"],
        bad=["skills", "propose", "--org", "demo", "--file", "{bad}", *S],
        why="ok writes into the demo's store: tests/unit/skills/test_skills_cli.py proposes into its own",
    ),
    "operators add": Row(
        no_store=["operators", "add", "--org", "demo", "--person", "u-kazu"],
        bad=["operators", "add", "--org", "demo", "--person", "u-nobody", *S],
        ok=["operators", "add", "--org", "demo", "--person", "u-kazu", *S],
    ),
    "operators iam": Row(
        no_store=["operators", "iam", "--org", "demo", "--person", "u-kazu", "--email", "kazu@example.com"],
        bad=["operators", "iam", "--org", "demo", "--person", "u-kazu", "--email", "kazu", *S],
        ok=["operators", "iam", "--org", "demo", "--person", "u-kazu", "--email", "Kazu@Example.com", *S],
    ),
    "operators list": Row(no_store=["operators", "list"], ok=["operators", "list", "--org", "demo", *S]),
    "operators revoke": Row(
        no_store=["operators", "revoke", "0123456789ab"],
        bad=["operators", "revoke", "0123", *S],
        finding=["operators", "revoke", "0123456789ab", *S],
    ),
    "jobs list": Row(
        no_store=["jobs", "list"], bad=["jobs", "list", "--status", "done", *S], ok=["jobs", "list", *S]
    ),
    "jobs show": Row(
        no_store=["jobs", "show", "--org", "demo", "job-1"],
        finding=["jobs", "show", "--org", "demo", "job-none", *S],
    ),
    "jobs cancel": Row(
        no_store=["jobs", "cancel", "--org", "demo", "job-1"],
        finding=["jobs", "cancel", "--org", "demo", "job-none", *S],
        why="ok and a job already over: tests/unit/cli/test_jobs_cli.py (the demo has no job)",
    ),
    "heartbeat add": Row(
        no_store=[*HB, "--schedule", "毎週月曜9時", "今週の締め切りを共有して"],
        bad=[*HB, "--schedule", "隔週の月曜", "今週の締め切りを共有して", *S],
        ok=[*HB, "--schedule", "平日の朝８時半", "今日の期限のタスクを教えて", *S],
    ),
    "heartbeat list": Row(
        no_store=["heartbeat", "list", "--org", "demo"],
        ok=["heartbeat", "list", "--org", "demo", "--json", *S],
    ),
    "heartbeat remove": Row(
        no_store=["heartbeat", "remove", "--org", "demo", "hb-1"],
        finding=["heartbeat", "remove", "--org", "demo", "hb-none", *S],
        why="ok: tests/unit/heartbeat/test_heartbeat_tasks_store.py (the demo has no task)",
    ),
}


@pytest.fixture(autouse=True)
def _a_case_on_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    """What ``charter policy check`` reads (the other commands read no stdin)."""
    case = {"proposal": text("こんにちはウル"), "user": USER}
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(case, ensure_ascii=False)))


def _leaves() -> list[str]:
    return [" ".join(path) for path, _, group in runner.walk(cli.parser()) if path and not group]


def _groups() -> list[tuple[str, ...]]:
    return [path for path, _, group in runner.walk(cli.parser()) if group]


@pytest.fixture
def no_store_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An environment that names no store and a CHARTER_HOME nothing was left in."""
    for name in ("CHARTER_STORE", "CHARTER_STORE_PATH", "FIRESTORE_EMULATOR_HOST", "CHARTER_ENV"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CHARTER_HOME", str(tmp_path / "home"))
    return tmp_path


def _argv(argv: list[str], tmp: Path, store: Path | None = None) -> list[str]:
    bad = tmp / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    (tmp / "empty").mkdir(exist_ok=True)
    words = {"{store}": str(store), "{bad}": str(bad), "{tmp}": str(tmp / "empty")}
    return [words.get(w, w) for w in argv]


def _exit(argv: list[str]) -> int:
    try:
        return cli.main(argv)
    except SystemExit as exc:  # argparse's own usage errors
        return int(exc.code or 0)


def _assert_one_error_line(err: str) -> None:
    # argparse's usage (its first line and the indented rest) may precede its one error line
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith(("usage:", " "))]
    assert "Traceback" not in err
    assert len(lines) == 1 and "error:" in lines[0], err


def test_every_command_has_a_row():
    # GIVEN the whole parser, WHEN its leaves are listed, THEN each has a row (and no row is stale)
    assert sorted(_leaves()) == sorted(COMMANDS)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_is_0_and_an_unknown_option_is_2(command: str, capsys: pytest.CaptureFixture[str]):
    assert _exit([*command.split(), "--help"]) == 0
    assert capsys.readouterr().out.startswith(f"usage: charter {command}")
    assert _exit([*command.split(), "--no-such-option"]) == 2
    err = capsys.readouterr().err
    assert "error:" in err and "Traceback" not in err  # unrecognized, or a required one missing


@pytest.mark.parametrize("group", _groups(), ids=lambda p: " ".join(p) or "charter")
def test_a_group_without_its_action_prints_its_own_help_on_stderr_and_exits_2(
    group: tuple[str, ...], capsys: pytest.CaptureFixture[str]
):
    assert _exit(list(group)) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"usage: {' '.join(('charter', *group))} ")


@pytest.mark.parametrize("command", sorted(c for c, row in COMMANDS.items() if row.no_store))
def test_no_store_is_2_with_one_line(command: str, no_store_home: Path, capsys: pytest.CaptureFixture[str]):
    argv = COMMANDS[command].no_store
    assert argv is not None
    assert _exit(_argv(argv, no_store_home)) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("charter: error: ") and captured.err.count("\n") == 1, captured.err
    assert "store" in captured.err


@pytest.mark.parametrize("command", sorted(c for c, row in COMMANDS.items() if row.bad))
def test_a_bad_file_or_value_is_2_without_a_traceback(
    command: str, demo_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    argv = COMMANDS[command].bad
    assert argv is not None
    assert _exit(_argv(argv, tmp_path, demo_store)) == 2
    err = capsys.readouterr().err
    _assert_one_error_line(err)
    if "{bad}" in argv:  # the line is about the file, not about something else
        assert "bad.json" in err


@pytest.mark.parametrize("command", sorted(c for c, row in COMMANDS.items() if row.finding))
def test_a_finding_is_1(command: str, demo_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    argv = COMMANDS[command].finding
    assert argv is not None
    assert _exit(_argv(argv, tmp_path, demo_store)) == 1
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize("command", sorted(c for c, row in COMMANDS.items() if row.ok))
def test_ok_is_0_and_json_is_one_document(
    command: str, demo_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    argv = COMMANDS[command].ok
    assert argv is not None
    assert _exit(_argv(argv, tmp_path, demo_store)) == 0
    out = capsys.readouterr().out
    if "--json" in argv:
        json.loads(out)
    else:
        assert "None" not in out.split() and "True" not in out.split() and "False" not in out.split()


def test_an_unexpected_exception_is_one_line_naming_its_log(
    no_store_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    # GIVEN a command that fails in a way nobody planned for
    from shared_lib.cli import tools

    def broken(_args: object) -> int:
        raise KeyError("surprise")

    monkeypatch.setattr(tools, "cmd_check", broken)
    # WHEN it runs, THEN one line names the log that holds the traceback, exit 1
    assert _exit(["tools", "check"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("charter: error: unexpected KeyError") and err.count("\n") == 1
    log = Path(err.split("the traceback is in ")[1].rstrip(")\n"))
    assert log.is_relative_to(no_store_home / "home" / "logs")
    assert "Traceback" in log.read_text(encoding="utf-8") and "surprise" in log.read_text(encoding="utf-8")


def _org_rows() -> list[tuple[str, list[str]]]:
    """Every command whose row passes ``--org``, with the first such argv of its row."""
    out = []
    for command, row in sorted(COMMANDS.items()):
        argv = next((a for a in (row.ok, row.finding, row.bad, row.no_store) if a and "--org" in a), None)
        if argv is not None:
            out.append((command, argv))
    return out


@pytest.mark.parametrize("bad_org", ["demo/", "demo org", "ｄｅｍｏ", "../orgs", "営業部", "a" * 129])
@pytest.mark.parametrize(("command", "argv"), _org_rows(), ids=[c for c, _ in _org_rows()])
def test_an_org_that_is_not_an_id_is_2_with_one_line(
    command: str,
    argv: list[str],
    bad_org: str,
    demo_store: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
):
    # GIVEN a command's argv over the demo's store WHEN its --org is not an organisation id
    words = _argv(argv, tmp_path, demo_store)
    words[words.index("--org") + 1] = bad_org
    # THEN it exits 2 with one line naming --org, and no traceback
    assert _exit(words) == 2
    err = capsys.readouterr().err
    _assert_one_error_line(err)
    assert "--org" in err
