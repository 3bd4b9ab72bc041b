"""The persona core's pin (seed 001 §16.2): a process whose core differs from the pinned one by a
single byte refuses to start, with one line naming the file, the hash it has and the pinned one."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from shared_lib.errors import ConfigError
from shared_lib.persona.catalogue import PERSONA_DIR, load_persona, verify_persona
from shared_lib.persona.core import core_sha256, load_core
from shared_lib.wiring.composition import build_runtime, check_startup

SHIPPED = load_persona()


def _copy(tmp_path: Path) -> Path:
    """A copy of the shipped persona directory (persona file, core, prompts)."""
    target = tmp_path / "personas"
    shutil.copytree(PERSONA_DIR, target)
    return target


def _flip_one_byte(file: Path) -> None:
    data = bytearray(file.read_bytes())
    i = data.index(b"max_message_length = 1200") + len(b"max_message_length = 120")
    data[i] = ord("1")  # 1200 -> 1201: one byte
    file.write_bytes(bytes(data))


def test_the_shipped_core_is_the_pinned_one_and_the_runtime_starts():
    assert SHIPPED.core_sha256 == core_sha256(SHIPPED.core_path())
    assert verify_persona(SHIPPED) == SHIPPED.core_sha256
    rt = build_runtime({"CHARTER_ENV": "test"})
    assert rt.persona.core().tone.sentence_endings == ["ウル"]


def test_a_core_one_byte_different_refuses_to_start(tmp_path):
    # GIVEN a copy of the persona whose core differs by one byte, its pin unchanged
    personas = _copy(tmp_path)
    core = personas / "soulkun.core.toml"
    _flip_one_byte(core)
    environ = {"CHARTER_ENV": "test", "CHARTER_PERSONA": str(personas / "soulkun.toml")}
    # WHEN a runtime is built from it, or a function checks its start
    with pytest.raises(ConfigError) as built:
        build_runtime(environ)
    with pytest.raises(ConfigError) as started:
        check_startup(environ)
    # THEN both refuse, with one line naming the file, the hash it has and the pinned one
    got = core_sha256(core)
    want = SHIPPED.core_sha256
    line = f"persona core {core}: sha256 {got} does not match the pinned {want}; refusing to start"
    assert str(built.value) == line
    assert str(started.value) == line
    assert "\n" not in line and got != want


def test_the_setting_overrides_the_pin_for_a_company_core(tmp_path):
    # GIVEN a company's own core (one byte different) and its hash in CHARTER_PERSONA_CORE_SHA256
    personas = _copy(tmp_path)
    core = personas / "soulkun.core.toml"
    _flip_one_byte(core)
    environ = {
        "CHARTER_ENV": "test",
        "CHARTER_PERSONA": str(personas / "soulkun.toml"),
        "CHARTER_PERSONA_CORE_SHA256": core_sha256(core),
    }
    # THEN the runtime starts and reads that core
    rt = build_runtime(environ)
    assert rt.persona.core().boundaries.max_message_length == 1201
    # AND the shipped core under a pin of another hash refuses
    with pytest.raises(ConfigError, match=r"does not match the pinned 0{64};"):
        build_runtime({"CHARTER_ENV": "test", "CHARTER_PERSONA_CORE_SHA256": "0" * 64})


def test_the_identity_text_is_part_of_the_core(tmp_path):
    # GIVEN the system prompt (「私は誰か」) changed, the core and its pin untouched
    personas = _copy(tmp_path)
    prompt = personas / "soulkun_system.md"
    prompt.write_text(prompt.read_text(encoding="utf-8") + "\n追加の一文。\n", encoding="utf-8")
    persona = load_persona(str(personas / "soulkun.toml"))
    # THEN the start refuses: the core pins the identity text's hash
    with pytest.raises(ConfigError, match=r"persona system prompt .*soulkun_system.md: sha256 .* pinned"):
        verify_persona(persona)
    assert load_core().persona.system_prompt_sha256 == core_sha256(PERSONA_DIR / "soulkun_system.md")


def test_a_persona_without_a_pin_refuses_to_start(tmp_path):
    personas = _copy(tmp_path)
    toml = personas / "soulkun.toml"
    toml.write_text(
        "\n".join(
            x for x in toml.read_text(encoding="utf-8").splitlines() if not x.startswith("core_sha256")
        ),
        encoding="utf-8",
    )
    with pytest.raises(ConfigError, match="no pinned sha256"):
        verify_persona(load_persona(str(toml)))
