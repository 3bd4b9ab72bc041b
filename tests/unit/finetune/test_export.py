"""The export: provider formats line by line, the guards of seed 001 §29.5, the card, the
masking check (a planted raw secret: exit with nothing written)."""

from __future__ import annotations

import hashlib
import json
from datetime import date, timedelta
from pathlib import Path

import pytest
from pydantic import ValidationError

from shared_lib.brain.vault import vault_cipher
from shared_lib.features.finetune.state.config import load_config, set_opt_in
from shared_lib.features.finetune.state.export import ExportFilter, card_path, export
from shared_lib.features.finetune.state.formats import AnthropicExample, OpenAIExample, build_line, parse_line
from shared_lib.turn.proposal import Proposal
from tests.unit.finetune.ft_fakes import NOW, ORG, opted_in_store, plant, tool_proposal

CIPHER = vault_cipher("test", None)  # the development vault key


def _run(store, tmp_path: Path, fmt: str = "openai", **kw):  # type: ignore[no-untyped-def]
    out = tmp_path / "ft.jsonl"
    return out, export(store, ORG, fmt=fmt, out=out, now=NOW, **{"cipher": CIPHER, **kw})


@pytest.mark.parametrize(("fmt", "model"), [("openai", OpenAIExample), ("anthropic", AnthropicExample)])
def test_every_written_line_parses_as_the_providers_format_and_teaches_the_proposal(tmp_path, fmt, model):  # type: ignore[no-untyped-def]
    store = opted_in_store()
    plant(store, "t1", user_text="電話は [PHONE_1] です")
    plant(store, "t2", status="edited", proposal=tool_proposal(), tool="create_task")
    out, result = _run(store, tmp_path, fmt)
    assert result.ok and result.reason == "written"
    lines = out.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2
    for line in lines:
        example = model.model_validate_json(line)
        assistant = example.messages[-1]
        assert assistant.role == "assistant"
        Proposal.model_validate_json(assistant.content)  # the brain's output schema
    assert "[PHONE_1]" in lines[0]  # a placeholder is the masking: it may stay


def test_the_formats_refuse_what_the_providers_refuse():
    with pytest.raises(ValidationError):
        OpenAIExample.model_validate(
            {"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]}
        )
    with pytest.raises(ValidationError):
        AnthropicExample.model_validate(
            {
                "system": "s",
                "messages": [{"role": "assistant", "content": "a"}, {"role": "user", "content": "b"}],
            }
        )
    with pytest.raises(ValidationError):
        build_line("anthropic", system="s", user=" ", assistant="{}")
    with pytest.raises(ValidationError):
        parse_line("openai", json.dumps({"messages": [{"role": "tool", "content": "x"}]}))


def test_only_reviewed_and_never_held_out_examples_leave_with_the_reasons_counted(tmp_path):  # type: ignore[no-untyped-def]
    store = opted_in_store()
    plant(store, "t1")
    plant(store, "t2", held_out=True)
    plant(store, "t3", status="pending")
    plant(store, "t4", status="rejected")
    plant(
        store,
        "t5",
        user_text="お願い t1",
        proposal=store.get("orgs/acme/ft_candidates/t1")["target"]["proposal"],
    )
    out, _ = _run(store, tmp_path)
    card = json.loads(card_path(out).read_text(encoding="utf-8"))
    assert card["count"] == 1
    assert card["skipped"] == {
        "held_out": 1,
        "not_reviewed": 1,
        "rejected": 1,
        "no_target": 0,
        "invalid": 0,
        "duplicate": 1,
        "cap": 0,
    }
    assert card["sha256"] == hashlib.sha256(out.read_bytes()).hexdigest()
    assert card["masking_check"] == {"passed": True, "lines": 1, "findings": 0}
    assert card["org"] == ORG and card["format"] == "openai"
    assert card["counts"]["route"] == {"CHAT": 1}
    record = store.get(f"orgs/{ORG}/ft_exports/{card['export_id']}")
    assert record is not None and record["candidate_ids"] == ["t1"]


def test_caps_per_person_per_tool_and_per_export_hold(tmp_path):  # type: ignore[no-untyped-def]
    store = opted_in_store()
    for i in range(4):
        plant(store, f"a{i}", user_id="u1", created_at=NOW + timedelta(minutes=i))
    for i in range(3):
        plant(store, f"b{i}", user_id=f"p{i}", tool="create_task", proposal=tool_proposal(title=f"t{i}"))
    per_tool = load_config().model_copy(update={"per_person_max": 3, "per_tool_max": 2})
    _, result = _run(store, tmp_path, cfg=per_tool)
    assert result.card["count"] == 4 and result.card["skipped"]["cap"] == 3
    assert result.card["counts"]["tool"] == {"(reply)": 2, "create_task": 2}
    per_person = load_config().model_copy(update={"per_person_max": 1, "per_tool_max": 10})
    _, result = _run(store, tmp_path, cfg=per_person)
    assert result.card["count"] == 4 and result.card["counts"]["tool"] == {"(reply)": 1, "create_task": 3}
    _, limited = _run(store, tmp_path, cfg=per_person, flt=ExportFilter(limit=2))
    assert limited.card["count"] == 2 and limited.card["skipped"]["cap"] == 5


def test_an_export_never_takes_more_than_five_hundred():
    with pytest.raises(ValidationError):
        load_config().model_validate({**load_config().model_dump(), "export_max": 501})


def test_the_date_filter_and_the_range_on_the_card(tmp_path):  # type: ignore[no-untyped-def]
    store = opted_in_store()
    plant(store, "old", created_at=NOW - timedelta(days=3))
    plant(store, "new", created_at=NOW)
    _, result = _run(store, tmp_path, flt=ExportFilter(since=date(2026, 11, 24)))
    assert result.card["count"] == 1
    assert result.card["date_range"]["first"] == NOW.isoformat()
    assert result.card["filters"]["since"] == "2026-11-24"


@pytest.mark.parametrize("leak", ["090-1234-5678", "sk-ant-" + "a" * 30])
def test_a_planted_raw_secret_fails_the_masking_check_and_nothing_is_written(tmp_path, leak):  # type: ignore[no-untyped-def]
    # GIVEN an accepted candidate written straight into the store, unmasked
    store = opted_in_store()
    plant(store, "t1")
    plant(store, "t2", raw=True, user_text=f"これを使って {leak}")
    # WHEN it is exported
    out, result = _run(store, tmp_path)
    # THEN the check fails on that candidate, and no file (nor card) is written
    assert not result.ok and result.reason == "masking_check_failed"
    assert [f["candidate_id"] for f in result.findings] == ["t2"]
    assert leak not in json.dumps(result.findings)
    assert not out.exists() and not card_path(out).exists()
    assert list(tmp_path.iterdir()) == []


def test_nothing_reviewed_is_nothing_to_export(tmp_path):  # type: ignore[no-untyped-def]
    store = opted_in_store()
    plant(store, "t1", status="pending")
    out, result = _run(store, tmp_path)
    assert result.reason == "nothing_to_export" and not out.exists()


def test_one_organisation_per_export_never_another_ones_candidates(tmp_path):  # type: ignore[no-untyped-def]
    store = opted_in_store()
    plant(store, "t1")
    store.set("orgs/globex/ft_candidates/g1", {**store.get(f"orgs/{ORG}/ft_candidates/t1"), "turn_id": "g1"})
    out, result = _run(store, tmp_path)
    record = store.get(f"orgs/{ORG}/ft_exports/{result.card['export_id']}")
    assert result.card["count"] == 1 and record["candidate_ids"] == ["t1"]
    assert "globex" not in out.read_text(encoding="utf-8")


def test_an_organisation_that_turned_staging_off_exports_nothing(tmp_path):  # type: ignore[no-untyped-def]
    # GIVEN examples staged and accepted while the organisation had opted in
    store = opted_in_store()
    plant(store, "t1")
    plant(store, "t2", status="edited")
    # WHEN the organisation turns staging off, and an export is asked for
    set_opt_in(store, ORG, False)
    _, result = _run(store, tmp_path)
    # THEN it refuses, and nothing is written or recorded
    assert not result.ok and result.reason == "staging_off"
    assert list(tmp_path.iterdir()) == [] and store.query(f"orgs/{ORG}/ft_exports") == []
    # AND an organisation that never opted in exports nothing either
    store.set(f"orgs/{ORG}/settings/company", {})
    assert _run(store, tmp_path)[1].reason == "staging_off"


def test_without_a_vault_key_to_seal_the_pseudonyms_nothing_is_written(tmp_path):  # type: ignore[no-untyped-def]
    store = opted_in_store()
    plant(store, "t1")
    _, result = _run(store, tmp_path, cipher=None)
    assert result.reason == "no_vault_key" and list(tmp_path.iterdir()) == []
