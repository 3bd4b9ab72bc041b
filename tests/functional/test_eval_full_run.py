"""The whole shipped eval sets through the legacy brain and the scripted model, in process (in-memory
fakes, no emulators; minutes, not a unit test's seconds): every case completes, and no reply
the user is sent carries a mask placeholder (the leak test).

* the coverage suite (``brain_eval.jsonl``): its cases with a fixed proposal (``deciding``) all
  pass, the same for both brains;
* the people's set (``people_eval.jsonl``): its deciding cases state what a company would want,
  which today's guardian does not all do (the report lists them), so here they must only run
  the same whatever the brain: they measure the deciding layers, not the brain."""

from __future__ import annotations

from typing import Any

from infra.fake_llm.port import InProcessScriptedLLM
from shared_lib.evals.dataset import BRAIN_SET, PEOPLE_SET, Case, load_cases
from shared_lib.evals.report import internal_names, run_eval
from shared_lib.evals.runner import Brain, eval_settings
from shared_lib.wiring.features import tool_registry


def _run(cases: list[Case]) -> dict[str, Any]:
    brains = [Brain("legacy", "legacy"), Brain("scripted", "llm", InProcessScriptedLLM())]
    return run_eval(cases, brains, eval_settings({}), internal=internal_names(tool_registry()))


def _completes_without_a_leak(cases: list[Case], result: dict[str, Any]) -> None:
    assert result["leaks"] == 0, [b["leak_examples"] for b in result["brains"]]
    fixed = [c for c in cases if c.group == "deciding"]
    for brain in result["brains"]:
        deciding = brain["deciding"]
        assert brain["cases"] == len(cases) - len(fixed) and deciding["cases"] == len(fixed)
        assert brain["errors"] == 0 and deciding["errors"] == 0
        assert 0 < brain["accuracy"] < 1  # a baseline, not a tautology: some cases fail
        # a fixed proposal is decided the same whichever brain ran
        assert deciding == result["brains"][0]["deciding"]
    assert result["brains"][1]["cost"]["total_usd"] > 0


def test_the_coverage_suite_completes_without_a_leak() -> None:
    cases = load_cases(BRAIN_SET)
    result = _run(cases)
    _completes_without_a_leak(cases, result)
    # the deciding layers decide every fixed proposal of the coverage suite as the case says
    assert all(brain["deciding"]["failures"] == [] for brain in result["brains"])


def test_the_peoples_set_completes_without_a_leak() -> None:
    cases = load_cases(PEOPLE_SET)
    _completes_without_a_leak(cases, _run(cases))
