"""The organisation's learned persona in a call (seed 001 §16.4): the merged view reaches the model.

The core stays in Base (the persona's system prompt, the same bytes for every turn: the prompt
cache holds); what the organisation taught (``turn.context.persona_ext``, stored masked) and the
override of the turn's context go in the volatile part: the proposal's Main, and a system block
of its own after Base in the phrasing call.

The code picks the context: ``announcement`` when a tool of the turn (proposed at an earlier
step or this one, run, or waiting for its confirmation) is an announcement tool, or, before any
proposal, when the user's words hold a keyword of one (``tools.json`` ``keywords``).
"""

from __future__ import annotations

from shared_lib.persona.catalogue import Persona
from shared_lib.persona.ext import CONTEXTS, context_of_tools, learned_block, override_text
from shared_lib.tools.registry import ToolRegistry
from shared_lib.turn.envelope import Turn


def turn_tools(turn: Turn) -> list[str]:
    """The tools this turn is about, so far."""
    proposals = [s.proposal for s in turn.loop.steps] + [turn.proposal.proposal]
    names = [c.tool_name for p in proposals if p is not None for c in p.tool_calls]
    names += [r.tool_name for s in turn.loop.steps for r in s.results] + [
        r.tool_name for r in turn.execution.results
    ]
    pending = turn.context.pending_action or {}
    names += [str(pending["tool_name"])] if pending.get("tool_name") else []
    return names


def context_for(turn: Turn, registry: ToolRegistry) -> str | None:
    """The context of the turn's reply (``persona_ext.CONTEXTS``), or ``None``."""
    if (known := context_of_tools(turn_tools(turn))) is not None:
        return known
    text = turn.brain_text()
    for context, tools in CONTEXTS.items():
        specs = [registry.get(t) for t in tools]
        if any(k and k in text for spec in specs if spec is not None for k in spec.keywords):
            return context
    return None


def persona_block(turn: Turn, persona: Persona, registry: ToolRegistry) -> str:
    """「学んだ好み」 and the context's override (``""``: neither); the texts are stored masked."""
    ext = turn.context.persona_ext
    core = persona.core()
    parts = [learned_block(ext), override_text(core, ext, context_for(turn, registry))]
    return "\n\n".join(p for p in parts if p)


def persona_system(turn: Turn, persona: Persona, registry: ToolRegistry) -> list[dict[str, str]]:
    """The phrasing call's block after Base (none when nothing is taught and no override applies)."""
    block = persona_block(turn, persona, registry)
    return [{"type": "text", "text": block}] if block else []
