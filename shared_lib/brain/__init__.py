"""The proposing half: the LLM brain under its constitution, and the legacy keyword brain.

Public entry points (see ``README.md`` in this package):

* ``shared_lib.brain.llm_arm.run(turn, rt)`` — the LLM arm of the brain layer;
* ``shared_lib.brain.legacy.propose(text, registry=..., persona=...)`` — the legacy brain;
* ``shared_lib.brain.integration.integrate(turn, rt)`` — the reply after execution;
* ``shared_lib.brain.vault.restore_parameters(turn, params, store)`` — for the executor only.
"""
