"""The one source of flags: the file's schema, ``charter flags validate``, the stored shape."""

from __future__ import annotations

import hashlib
import json

import pytest
from rollout_fakes import write_flags

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.cli import main
from shared_lib.errors import ConfigError
from shared_lib.flags import (
    FLAGS_DOC,
    REPO_FLAGS_FILE,
    FlagsDocument,
    flags_store_doc,
    load_flags_file,
    parse_store_doc,
    seed_flags,
)


def test_given_the_repository_flags_file_when_validated_then_it_passes(capsys):
    # GIVEN the file Terraform applies WHEN validated THEN exit 0 and its version is printed
    assert main(["flags", "validate", str(REPO_FLAGS_FILE)]) == 0
    assert load_flags_file().version in capsys.readouterr().out


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"canary_percent": 150}, "field canary_percent"),
        ({"brain_mode": "turbo"}, "field brain_mode"),
        ({"auto_approve": {"max_level": 9}}, "field auto_approve.max_level"),
        ({"rollback_guard": {"block_rate_max": 2}}, "field rollback_guard.block_rate_max"),
        ({"rollback_guard": {"cost_day_timezone": "Mars/Olympus"}}, "field rollback_guard.cost_day_timezone"),
        ({"org_modes": {"acme": "sometimes"}}, "field org_modes.acme"),
        ({"kill_swich": True}, "field kill_swich"),
        ({"allowlist": ["u1"], "denylist": ["u1"]}, "field denylist"),
        ({"version": ""}, "field version"),
    ],
)
def test_given_a_bad_field_when_validated_then_exit_2_names_that_field(tmp_path, capsys, changes, field):
    # GIVEN a flags file with one bad field
    path = write_flags(tmp_path / "flags.json", **changes)
    # WHEN it is validated
    code = main(["flags", "validate", str(path)])
    # THEN exit 2, and the error names the exact field
    assert code == 2
    assert field in capsys.readouterr().err


def test_given_a_file_that_is_not_json_when_validated_then_exit_2_with_the_position(tmp_path, capsys):
    path = tmp_path / "flags.json"
    path.write_text('{"version": "x",,}', encoding="utf-8")
    assert main(["flags", "validate", str(path)]) == 2
    assert "not valid JSON" in capsys.readouterr().err


def test_given_a_flags_file_when_seeded_then_the_store_holds_the_file_text_as_terraform_writes_it(tmp_path):
    # GIVEN a flags file
    path = write_flags(tmp_path / "flags.json", brain_mode="canary", canary_percent=10)
    store = MemoryStore()
    # WHEN it is seeded
    doc = seed_flags(store, path)
    # THEN config/flags holds the whole file as document_json, its version, its sha256 and the author
    stored = store.get(FLAGS_DOC)
    text = path.read_text(encoding="utf-8")
    assert stored == {
        "document_json": text,
        "version": doc.version,
        "sha256": hashlib.sha256(text.encode()).hexdigest(),
        "updated_by": "seed",
    }
    assert parse_store_doc(stored) == doc


def test_given_a_stored_document_whose_checksum_does_not_match_when_parsed_then_it_is_invalid():
    stored = flags_store_doc(FlagsDocument(version="v1"))
    stored["document_json"] = stored["document_json"].replace("legacy", "llm")
    with pytest.raises(ConfigError, match="sha256"):
        parse_store_doc(stored)


def test_given_a_terraform_document_without_checksum_when_parsed_then_the_json_is_validated():
    # Terraform writes document_json, version (the file's sha256) and updated_by
    text = json.dumps({"version": "v7", "brain_mode": "shadow"})
    doc = parse_store_doc(
        {
            "document_json": text,
            "version": hashlib.sha256(text.encode()).hexdigest(),
            "updated_by": "terraform",
        }
    )
    assert doc.version == "v7" and doc.brain_mode == "shadow"


def test_given_the_schema_when_every_issue_flag_is_looked_up_then_it_exists():
    # kill switch, modes (global, per org), canary, salt, shadow sampling, lists, self-critique,
    # fast path, model choice, auto-approve, guard thresholds
    fields = set(FlagsDocument.model_fields)
    assert {
        "kill_switch",
        "brain_mode",
        "org_modes",
        "canary_percent",
        "bucket_salt",
        "shadow_sample_percent",
        "allowlist",
        "denylist",
        "self_critique_rate",
        "fast_path",
        "model",
        "fast_model",
        "auto_approve",
        "rollback_guard",
    } <= fields
