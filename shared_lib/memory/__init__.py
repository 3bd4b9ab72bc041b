"""Memory (seed 001 §18–22): what lasts beyond one conversation. Domain floor, between
``state`` and ``context``: it may import tools, policy, state, the ports, the persona and the
sanitizer; never ``context``, ``layers`` or the runtime.

* ``episodes``: episodic memory (§22) — a daily digest per organisation and day, and
  event-driven episodes of a turn (a task done, a goal reached, 「覚えておいて」).
* ``tags``: dynamic tags on episodes and chunks (§21), the daily tagging job, tag search.
* ``answers``: the JSON answer of a background memory call, validated, retried once.
"""
