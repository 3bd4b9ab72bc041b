"""The whole shipped set through the legacy brain and the scripted model (a few seconds): every
case completes, and no reply the user is sent carries a mask placeholder (the leak test); the
cases with a fixed proposal are summed apart (``deciding``), all pass, the same for both brains."""

from __future__ import annotations

from infra.fake_llm.port import InProcessScriptedLLM
from shared_lib.evals.dataset import load_cases
from shared_lib.evals.report import internal_names, run_eval
from shared_lib.evals.runner import Brain, eval_settings
from shared_lib.tools.builtin import builtin_registry


def test_the_whole_set_completes_without_a_leak() -> None:
    cases = load_cases()
    brains = [Brain("legacy", "legacy"), Brain("scripted", "llm", InProcessScriptedLLM())]
    result = run_eval(cases, brains, eval_settings({}), internal=internal_names(builtin_registry()))
    assert result["leaks"] == 0, [b["leak_examples"] for b in result["brains"]]
    fixed = [c for c in cases if c.group == "deciding"]
    for brain in result["brains"]:
        deciding = brain["deciding"]
        assert brain["cases"] == len(cases) - len(fixed) and deciding["cases"] == len(fixed)
        assert brain["errors"] == 0 and deciding["errors"] == 0
        assert 0 < brain["accuracy"] < 1  # a baseline, not a tautology: some cases fail
        # the deciding layers decide every fixed proposal as the case says, whichever brain ran
        assert deciding["failures"] == [] and deciding == result["brains"][0]["deciding"]
    assert result["brains"][1]["cost"]["total_usd"] > 0
