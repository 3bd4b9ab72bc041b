"""A skill's examples run in the sandbox against a turn's budget (seconds of real processes):
what the budget cannot finish leaves the test incomplete, never failed. The store's other
rules are ``tests/unit/skills/test_skills_store.py``."""

from __future__ import annotations

from shared_lib.adapters.memory_store import MemoryStore
from tests.unit.skills.skill_fakes import CONFIG, NETWORK, ORG, spec

SLOW = (  # about 1.5 s of wall clock with the modules a skill may import
    "import datetime\ndef run(input, view):\n    t = datetime.datetime.now()\n"
    "    while (datetime.datetime.now() - t).total_seconds() < 1.5:\n        pass\n"
    "    return {'sum': input['a'] + input['b']}\n"
)


def test_given_a_turns_budget_then_examples_it_cannot_finish_leave_the_test_incomplete_not_failed():
    from shared_lib.features.skills.store_examples import run_examples

    slow = spec(SLOW, examples=[{"input": {"a": 1, "b": 2}, "output": {"sum": 3}}] * 3)
    # WHEN the three 1.5 s examples get a total budget of 2 s (a turn's), THEN no verdict is given
    cut = run_examples(slow, MemoryStore(), ORG, CONFIG, budget_seconds=2.0)
    assert cut["incomplete"] is True and cut["passed"] is False
    assert all(x["ok"] for x in cut["examples"])
    # AND without a budget (`charter skills test`) they run to the end and pass
    full = run_examples(slow, MemoryStore(), ORG, CONFIG)
    assert full["passed"] is True and full["incomplete"] is False and len(full["examples"]) == 3
    # AND a refusal inside the budget is still a verdict
    refused = run_examples(spec(NETWORK), MemoryStore(), ORG, CONFIG, budget_seconds=2.0)
    assert refused["incomplete"] is False and refused["passed"] is False
