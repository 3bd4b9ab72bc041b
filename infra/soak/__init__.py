"""A soak of the local stack: many turns over many conversations, with layers killed, LLM
faults and provider redeliveries, and nothing lost or repeated (``python -m infra.soak``).

``plan`` decides what is sent (seeded), ``run`` sends it, makes the chaos and counts; the
command line (``__main__``) starts its own stack (or uses a running one) and stops
everything it started.
"""

from infra.soak.plan import PlannedTurn, plan, scenario
from infra.soak.run import Options, Soak

__all__ = ["Options", "PlannedTurn", "Soak", "plan", "scenario"]
