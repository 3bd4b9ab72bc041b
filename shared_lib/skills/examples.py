"""A version's examples run in the sandbox and compared (seed 001 §23.3): its test.

Every example's input goes through ``sandbox.run_skill``; its output must equal the example's
(a prompt's text compared without surrounding blanks). A sandbox refusal (network, process, file,
store write, undeclared read, import, time, memory) ends the test there: the version fails with that kind.

>>> from shared_lib.adapters.memory_store import MemoryStore
>>> from shared_lib.skills.config import load_config
>>> from shared_lib.skills.spec import EXAMPLE, SkillSpec
>>> run_examples(SkillSpec.model_validate(EXAMPLE), MemoryStore(), "acme", load_config())["passed"]
True
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from shared_lib.ports import Store
from shared_lib.skills import store as skill_store
from shared_lib.skills.config import SandboxConfig
from shared_lib.skills.sandbox import run_skill
from shared_lib.skills.spec import SkillSpec

REFUSALS = {"timeout", "memory", "network", "process", "filesystem", "store_write", "store_read", "import"}


def _same(kind: str, got: Any, expected: Any) -> bool:
    if kind == "prompt" and isinstance(got, str) and isinstance(expected, str):
        return got.strip() == expected.strip()
    return bool(got == expected)


def run_examples(spec: SkillSpec, store: Store, org_id: str, config: SandboxConfig) -> dict[str, Any]:
    """``{"passed", "examples": [{index, ok, error_kind, error, output}], "error_kinds"}``."""
    results: list[dict[str, Any]] = []
    for index, example in enumerate(spec.examples):
        r = run_skill(spec, example.input, store, org_id, config)
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
    kinds = sorted({str(x["error_kind"]) for x in results if x["error_kind"]})
    passed = len(results) == len(spec.examples) and all(x["ok"] for x in results)
    return {"passed": passed, "examples": results, "error_kinds": kinds}


def run_version_test(
    store: Store, org_id: str, name: str, version: int | None, config: SandboxConfig, now: datetime
) -> tuple[int, str, dict[str, Any]]:
    """Run a version's examples (default: the latest) and record the result: ``(version, state, report)``."""
    doc = skill_store.get_version(store, org_id, name, version)
    report = run_examples(skill_store.spec_of(doc), store, org_id, config)
    number = int(doc["version"])
    return number, skill_store.record_test(store, org_id, name, number, report, now), report
