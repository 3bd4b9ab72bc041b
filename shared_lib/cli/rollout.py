"""``charter flags ...``, ``charter shadow ...`` and ``charter guard ...``.

The live store is the operator runtime's (``--store``/``--project``, the settings, or what
``charter local up`` / ``charter demo`` left in ``.charter/``). With no store configured,
``flags`` commands fall back to the repository's flags file and say so on stderr;
``shadow`` and ``guard`` exit 2. Tests hand a store in through the
parsed arguments (``args.store``) instead.

Exit codes: 0 ok, 1 a check failed (invalid live document, verdict HOLD with
``--fail-on-hold``), 2 bad input (an invalid flags file, a bad argument).

Each command group lives in its own module (``flags_cli``, ``shadow_cli``); what they
share is in ``console``.
"""

from __future__ import annotations

from typing import Any

from shared_lib.cli import flags as flags_cli
from shared_lib.cli import shadow as shadow_cli


def register(sub: Any) -> None:
    """The ``flags``, ``shadow`` and ``guard`` commands, in that order."""
    flags_cli.register(sub)
    shadow_cli.register(sub)
