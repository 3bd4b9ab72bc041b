"""A version's examples run in the sandbox and compared (seed 001 §23.3): its test.

Every example's input goes through ``sandbox.run_skill``; its output must equal the example's
(a prompt's text compared without surrounding blanks). A sandbox refusal (network, process, file,
store write, undeclared read, import, time, memory) ends the test there: the version fails with that kind.
A caller may give the test a total ``budget_seconds``: examples the budget does not reach, or
one cut short by the budget rather than by its own timeout, leave the report ``incomplete`` —
not a verdict. A draft is never tested in a person's turn (``features.skills.handlers``): the
operator's ``charter skills test`` or ``approve`` runs it.

>>> from shared_lib.adapters.memory_store import MemoryStore
>>> from shared_lib.features.skills.state.config import load_config
>>> from shared_lib.features.skills.state.spec import EXAMPLE, SkillSpec
>>> run_examples(SkillSpec.model_validate(EXAMPLE), MemoryStore(), "acme", load_config())["passed"]
True
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from shared_lib.features.skills import store as skill_store
from shared_lib.features.skills.state.config import SandboxConfig
from shared_lib.features.skills.state.sandbox import run_skill
from shared_lib.features.skills.state.spec import SkillSpec
from shared_lib.ports import Store

MIN_RUN_SECONDS = 0.5  # below it an example is not started: the report is incomplete
REFUSALS = {"timeout", "memory", "network", "process", "filesystem", "store_write", "store_read", "import"}


def _same(kind: str, got: Any, expected: Any) -> bool:
    if kind == "prompt" and isinstance(got, str) and isinstance(expected, str):
        return got.strip() == expected.strip()
    return bool(got == expected)


def run_examples(
    spec: SkillSpec, store: Store, org_id: str, config: SandboxConfig, *, budget_seconds: float | None = None
) -> dict[str, Any]:
    """``{"passed", "incomplete", "examples": [{index, ok, error_kind, error, output}], "error_kinds"}``."""
    ends = None if budget_seconds is None else time.monotonic() + budget_seconds
    results: list[dict[str, Any]] = []
    incomplete = False
    for index, example in enumerate(spec.examples):
        left = (
            config.timeout_seconds if ends is None else min(config.timeout_seconds, ends - time.monotonic())
        )
        if left < MIN_RUN_SECONDS:
            incomplete = True
            break
        run_config = (
            config if left == config.timeout_seconds else config.model_copy(update={"timeout_seconds": left})
        )
        r = run_skill(spec, example.input, store, org_id, run_config)
        if r.error_kind == "timeout" and left < config.timeout_seconds:
            incomplete = True  # the turn's budget ran out, not the skill's own timeout
            break
        matched = r.ok and _same(spec.kind, r.output, example.output)
        error = r.error if not r.ok else ("" if matched else "the output is not the example's")
        results.append(
            {
                "index": index,
                "ok": matched,
                "error_kind": r.error_kind,
                "error": error[:300],
                "output": r.output,
            }
        )
        if r.error_kind in REFUSALS:
            break
    refused = any(x["error_kind"] in REFUSALS for x in results)
    incomplete = incomplete and not refused and all(x["ok"] for x in results)
    kinds = sorted({str(x["error_kind"]) for x in results if x["error_kind"]})
    passed = len(results) == len(spec.examples) and all(x["ok"] for x in results)
    return {"passed": passed, "incomplete": incomplete, "examples": results, "error_kinds": kinds}


def run_version_test(
    store: Store, org_id: str, name: str, version: int | None, config: SandboxConfig, now: datetime
) -> tuple[int, str, dict[str, Any]]:
    """Run a version's examples (default: the latest) and record the result: ``(version, state, report)``."""
    doc = skill_store.get_version(store, org_id, name, version)
    report = run_examples(skill_store.spec_of(doc), store, org_id, config)
    number = int(doc["version"])
    return number, skill_store.record_test(store, org_id, name, number, report, now), report
