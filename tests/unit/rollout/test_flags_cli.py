"""``charter flags explain / show / override / clear-override``.

The live store is handed in through the parsed arguments (``args.store``), the seam the
command offers; the emulator-backed path is in tests/integration/test_flags_emulator.py.
"""

from __future__ import annotations

import io
import json
from datetime import timedelta

import pytest
from rollout_fakes import write_flags

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.cli import build_parser, main
from shared_lib.flags import OVERRIDE_DOC, REPO_FLAGS_FILE, bucket_fine, load_flags_file, seed_flags
from shared_lib.rollout.overrides import write_org_override, write_override


def run(argv: list[str], store: MemoryStore | None = None) -> int:
    args = build_parser().parse_args(argv)
    if store is not None:
        args.store = store
    return int(args.func(args))


def out_json(capsys) -> dict:
    return json.loads(capsys.readouterr().out)


def test_given_a_proposed_file_when_explained_as_json_then_arm_reason_bucket_and_version_are_printed(
    tmp_path, capsys
):
    # GIVEN a proposed flags file putting acme on canary at 100 %
    path = write_flags(
        tmp_path / "f.json",
        version="proposal-1",
        brain_mode="legacy",
        org_modes={"acme": "canary"},
        canary_percent=100,
    )
    # WHEN a person of acme is explained against it
    code = main(["flags", "explain", "--org", "acme", "--user", "u1", "--json", "--flags", str(path)])
    # THEN exactly the four fields are printed
    assert code == 0
    flags = load_flags_file(path)
    assert out_json(capsys) == {
        "arm": "llm",
        "reason": "ORG_MODE",
        "flags_version": "proposal-1",
        "bucket": bucket_fine(flags.bucket_salt, "acme", "u1"),
    }


def test_given_org_user_lines_on_stdin_when_explained_then_one_json_line_each(tmp_path, capsys, monkeypatch):
    path = write_flags(tmp_path / "f.json", brain_mode="llm", denylist=["u2"])
    monkeypatch.setattr("sys.stdin", io.StringIO("acme,u1\n\nacme,u2\n"))
    assert main(["flags", "explain", "--stdin", "--flags", str(path)]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(x["arm"], x["reason"]) for x in lines] == [("llm", "DEFAULT"), ("legacy", "DENYLIST")]


def test_given_a_malformed_stdin_line_when_explained_then_the_others_print_and_exit_is_2(
    tmp_path, capsys, monkeypatch
):
    path = write_flags(tmp_path / "f.json")
    monkeypatch.setattr("sys.stdin", io.StringIO("acme,u1\njust-one-field\n"))
    assert main(["flags", "explain", "--stdin", "--flags", str(path)]) == 2
    captured = capsys.readouterr()
    assert len(captured.out.splitlines()) == 1 and "line 2" in captured.err


def test_given_an_invalid_proposed_file_when_explained_then_exit_2_naming_the_field(tmp_path, capsys):
    path = write_flags(tmp_path / "f.json", canary_percent=-1)
    assert main(["flags", "explain", "--org", "a", "--user", "b", "--flags", str(path)]) == 2
    assert "field canary_percent" in capsys.readouterr().err


def test_given_no_store_configured_when_explained_then_the_repo_file_is_used_and_stderr_says_so(
    capsys, monkeypatch, tmp_path
):
    monkeypatch.chdir(tmp_path)  # no .charter/ left by a local stack or a demo here
    for var in ("FIRESTORE_EMULATOR_HOST", "CHARTER_STORE", "PUBSUB_EMULATOR_HOST", "CHARTER_BUS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("CHARTER_CHANNELS", "recording")
    assert main(["flags", "explain", "--org", "acme", "--user", "u1", "--json"]) == 0
    captured = capsys.readouterr()
    assert "no flags store configured" in captured.err and str(REPO_FLAGS_FILE) in captured.err
    assert json.loads(captured.out)["flags_version"] == load_flags_file().version


def test_given_a_live_store_with_an_override_when_explained_then_the_override_decides(tmp_path, capsys):
    # GIVEN the live document says llm, and the guard rolled back to legacy
    store = MemoryStore()
    seed_flags(store, write_flags(tmp_path / "f.json", version="live-3", brain_mode="llm"))
    write_override(
        store, brain_mode="legacy", ttl=timedelta(hours=2), author="rollback-guard", reason="errors"
    )
    # WHEN a person is explained against the live store
    assert run(["flags", "explain", "--org", "acme", "--user", "u1", "--json"], store) == 0
    # THEN the override decides
    result = out_json(capsys)
    assert (result["arm"], result["reason"], result["flags_version"]) == ("legacy", "OVERRIDE", "live-3")


def test_given_an_organisation_rolled_back_when_explained_then_that_org_is_legacy_and_the_others_keep_their_arm(
    tmp_path, capsys
):
    # GIVEN the live document says llm, and the guard rolled acme back alone
    store = MemoryStore()
    seed_flags(store, write_flags(tmp_path / "f.json", version="live-4", brain_mode="llm"))
    write_org_override(store, "acme", ttl=timedelta(hours=2), author="rollback-guard", reason="llm errors")
    # WHEN people of acme and beta are explained against the live store
    assert run(["flags", "explain", "--org", "acme", "--user", "u1", "--json"], store) == 0
    acme = out_json(capsys)
    assert run(["flags", "explain", "--org", "beta", "--user", "u1", "--json"], store) == 0
    beta = out_json(capsys)
    # THEN acme is served legacy by its rollback, beta keeps the LLM arm
    assert (acme["arm"], acme["reason"]) == ("legacy", "ORG_OVERRIDE")
    assert (beta["arm"], beta["reason"]) == ("llm", "DEFAULT")


def test_given_an_invalid_live_document_when_explained_then_error_reason_and_exit_1(capsys):
    store = MemoryStore()
    store.set("config/flags", {"document_json": "{}", "version": "?"})
    assert run(["flags", "explain", "--org", "acme", "--user", "u1", "--json"], store) == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out) == {
        "arm": "legacy",
        "reason": "ERROR",
        "bucket": None,
        "flags_version": "",
    }
    assert "field version" in captured.err


def test_given_an_operator_when_overriding_and_clearing_then_both_are_audited(tmp_path, capsys):
    store = MemoryStore()
    seed_flags(store, write_flags(tmp_path / "f.json", brain_mode="llm"))
    # WHEN the operator stops everything for 4 hours, then clears it
    assert (
        run(
            [
                "flags",
                "override",
                "--kill-switch",
                "on",
                "--ttl",
                "4h",
                "--author",
                "kazu",
                "--reason",
                "incident 42",
            ],
            store,
        )
        == 0
    )
    assert store.get(OVERRIDE_DOC)["kill_switch"] is True
    assert run(["flags", "clear-override", "--author", "kazu", "--reason", "resolved"], store) == 0
    capsys.readouterr()
    # THEN the override is gone and `flags show` lists both audit entries, newest first
    assert store.get(OVERRIDE_DOC) is None
    assert run(["flags", "show", "--json"], store) == 0
    shown = out_json(capsys)
    assert shown["override"] is None and shown["source"] == "store"
    assert [(a["action"], a["author"], a["reason"]) for a in shown["audit"]] == [
        ("override_cleared", "kazu", "resolved"),
        ("override_set", "kazu", "incident 42"),
    ]


@pytest.mark.parametrize(
    "argv",
    [
        ["flags", "override", "--ttl", "1h", "--author", "a", "--reason", "r"],  # sets nothing
        ["flags", "override", "--brain-mode", "legacy", "--ttl", "90d", "--author", "a", "--reason", "r"],
    ],
)
def test_given_a_bad_override_when_written_then_exit_2(argv, capsys):
    assert run(argv, MemoryStore()) == 2
    assert capsys.readouterr().err
