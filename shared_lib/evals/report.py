"""A whole run: every case through every brain, the figures, and how they are printed.

``run_eval`` returns the JSON document ``charter eval run --json`` prints::

    {"dataset": …, "cases": N, "note": "which brains ran and why",
     "brains": [{"brain": "legacy", "peer": None, "model": …, "accuracy": …, "route_accuracy": {correct, total, rate}, …,
                 "deciding": {"cases": …, "accuracy": …, "verdict_agreement": …, …}}],
     "leaks": total placeholders in replies across the brains}

A brain's figures are about its own cases; the cases with a fixed proposal (the ``deciding``
group: the same proposal whatever the brain) are summed apart under ``deciding``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from shared_lib.brain.reply_checks import internal_names as internal_names  # the CLI reads it here
from shared_lib.evals.dataset import Case
from shared_lib.evals.runner import Brain, run_case
from shared_lib.evals.scoring import score_case, summarize
from shared_lib.settings import Settings

Progress = Callable[[str, int, int], None]

_FIGURES = (
    ("route", "route_accuracy"),
    ("output type", "output_type_accuracy"),
    ("tool", "tool_accuracy"),
    ("parameters", "parameter_accuracy"),
    ("verdict", "verdict_agreement"),
    ("authorization", "authorization_agreement"),
    ("clarification", "clarification_agreement"),
    ("executed", "execution_agreement"),
    ("reply", "reply_agreement"),
    ("answers", "answers_question"),
)


def run_eval(
    cases: Sequence[Case],
    brains: Sequence[Brain],
    settings: Settings,
    *,
    dataset: str = "",
    note: str = "",
    progress: Progress | None = None,
    internal: Sequence[str] = (),
) -> dict[str, Any]:
    """``internal``: the names no reply may show (``internal_names``)."""
    summaries = []
    for brain in brains:
        scores = []
        for index, case in enumerate(cases, 1):
            scores.append(score_case(case, run_case(brain, case, settings)))
            if progress is not None:
                progress(brain.name, index, len(cases))
        model = (brain.served_model or brain.model) if brain.arm == "llm" else None
        summaries.append(summarize(brain.name, scores, model=model, internal=internal, peer=brain.peer))
    return {
        "dataset": dataset,
        "cases": len(cases),
        "note": note,
        "brains": summaries,
        "leaks": sum(s["leaks"] + (s["deciding"] or {}).get("leaks", 0) for s in summaries),
    }


def _pct(figure: dict[str, Any]) -> str:
    if not figure["total"]:
        return "-"
    return f"{figure['rate'] * 100:5.1f}% ({figure['correct']}/{figure['total']})"


def render_text(result: dict[str, Any]) -> str:
    """The run as a terminal report: one block per brain, then accuracy by group."""
    lines = [f"eval: {result['cases']} cases from {result['dataset']}", result["note"]]
    for s in result["brains"]:
        model = f" ({s['model']})" if s.get("model") else ""
        name = f"peer {s['peer']}, model {s['model']}" if s.get("peer") else f"{s['brain']}{model}"
        lines += ["", f"── {name}: {s['passed']}/{s['cases']} cases passed"]
        lines += [f"   {label:<14} {_pct(s[key])}" for label, key in _FIGURES]
        cost, latency = s["cost"], s["latency_ms"]
        lines.append(
            f"   cost           ${cost['total_usd']:.4f} total, ${cost['per_case_usd']:.5f}/case, "
            f"{cost['llm_calls']} LLM calls, {cost['input_tokens']}+{cost['output_tokens']} tokens"
        )
        lines.append(f"   latency        median {latency['median']} ms, p95 {latency['p95']} ms")
        hygiene = s["hygiene"]
        lines.append(
            f"   leaks          {s['leaks']} placeholders; replies with an ISO date in "
            f"{hygiene['iso_date_cases']} cases, with an internal name in {hygiene['internal_name_cases']}"
        )
        lines.append("   by group:")
        lines += [f"     {group:<14} {_pct(fig)}" for group, fig in s["by_group"].items()]
        if s["failures"]:
            shown = ", ".join(f"{f['id']}[{'/'.join(f['failed'])}]" for f in s["failures"][:12])
            lines.append(f"   failed (first): {shown}")
        if d := s["deciding"]:
            lines.append(
                f"   deciding       {d['passed']}/{d['cases']} cases with a fixed proposal passed "
                f"(verdict {_pct(d['verdict_agreement']).strip()}), {d['leaks']} placeholders"
            )
            if d["failures"]:
                lines.append("   deciding failed: " + ", ".join(f["id"] for f in d["failures"][:12]))
    return "\n".join(lines)
