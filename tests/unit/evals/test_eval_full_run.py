"""The whole shipped set through the legacy brain and the scripted model (a few seconds): every
case completes, and no reply the user is sent carries a mask placeholder (the leak test)."""

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
    for brain in result["brains"]:
        assert brain["cases"] == len(cases) and brain["errors"] == 0
        assert 0 < brain["accuracy"] < 1  # a baseline, not a tautology: some cases fail
    assert result["brains"][1]["cost"]["total_usd"] > 0
