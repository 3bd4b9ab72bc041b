"""Best-of-N phrasing of the reply text (seed 001 §3-4), per organisation, off by default.
``steps.py`` is the phrasing (the brain's integration reaches it as ``rt.hooks.phrasing``, lent by
this room's manifest); ``steps_evaluator.py`` scores the candidates; ``state.py`` is its
configuration (``config/best_of_n.json``) and ``state_difficulty.py`` the difficulty estimated by
code. A run's evidence is ``evaluations`` (scores only, no text).
"""
