"""Best-of-N phrasing of the reply text (seed 001 §3-4), per organisation (off unless the flags list it).
``steps.py`` is the phrasing of tool results and of a text answer (the brain's integration and
its LLM arm reach it as ``rt.hooks.phrasing``, lent by this room's manifest); ``steps_run.py``
runs the candidates, the judge and the evidence; ``steps_cost.py`` estimates a run's cost;
``steps_evaluator.py`` scores the candidates; ``state.py`` is its configuration
(``config/best_of_n.json``), ``state_difficulty.py`` the difficulty estimated by code and
``state_variety.py`` how much the candidates differ. A run's evidence is ``evaluations`` (scores,
variety and cost, no text).
"""
