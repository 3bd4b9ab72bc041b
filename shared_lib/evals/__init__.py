"""The brain's eval set and its harness (issue 18): Japanese cases with what the charter should
decide, run through the real in-process pipeline, scored by category.

* ``dataset`` — the case model, the loader and the check against the registry, the routes,
  the reason codes and the demo people (a case naming what does not exist is an error);
* ``fixtures`` — a case's fixed proposal (an ``LLM`` port answering with it) and policy patch;
* ``runner`` — one case through a runtime the composition root builds (no network);
* ``peer`` — a configured LLM peer as the brain under test, costed at its own model's price;
* ``scoring`` — expected against observed, per case and summed per brain;
* ``report`` — the summary as JSON or as text.

The command is ``charter eval run`` (``infra/eval_cli.py``: it also offers the scripted model,
which lives in ``infra``).
"""
