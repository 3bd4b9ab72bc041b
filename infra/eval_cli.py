"""``charter eval``: the brain's eval set (``shared_lib/config/eval``) through the product.

    charter eval run [--dataset PATH] [--brain legacy|scripted|claude ...] [--peer NAME ...]
                     [--model NAME] [--limit N] [--json]
    charter eval check [--dataset PATH]

``run`` sends every case through the in-process pipeline (``shared_lib.evals``) once per brain
and prints accuracy by category, route, tool and parameter accuracy, verdict, authorization
and clarification agreement, cost, latency and leaks; the cases with a fixed proposal (the same
for every brain) are reported apart, as ``deciding``. Without ``--brain`` it runs the legacy
brain, then Claude when ``ANTHROPIC_API_KEY`` is set (or the Anthropic-compatible peer
``ANTHROPIC_BASE_URL`` names), else the built-in scripted model, and says which. The command
lives here because the scripted model is this repository's test infrastructure.

``--peer NAME`` runs the set against the configured peer ``NAME`` (``CHARTER_PEERS`` or
``config/peers.json``: an Anthropic, Vertex or OpenAI-compatible peer), called directly with its
own model name and costed at that model's price (``shared_lib.evals.peer``); the report names
the peer and the model. With ``--peer`` and no ``--brain`` only the peers run.

The default dataset is the folder ``shared_lib/config/eval``: the coverage suite
(``brain_eval.jsonl``) and the people's set (``people_eval.jsonl``).

Exit codes: 0 ran, 1 a reply leaked a mask placeholder, 2 bad input (an invalid dataset, a
brain that is not configured, an unknown peer).
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from shared_lib.cli.runner import fail, progress
from shared_lib.errors import ConfigError
from shared_lib.evals.dataset import DATASET, check_cases, load_cases
from shared_lib.evals.peer import peer_brain
from shared_lib.evals.report import internal_names, render_text, run_eval
from shared_lib.evals.runner import Brain, eval_settings
from shared_lib.settings import Settings
from shared_lib.wiring.features import tool_registry

EXIT_OK, EXIT_LEAK, EXIT_USAGE = 0, 1, 2
BRAINS = ("legacy", "scripted", "claude")


def llm_configured(settings: Settings) -> bool:
    return settings.llm != "none" and bool(
        settings.secret("anthropic_api_key") or settings.anthropic_base_url
    )


def choose_brains(names: list[str] | None, settings: Settings, model: str | None) -> tuple[list[Brain], str]:
    """The brains to run and the note saying which ran and why (``ConfigError``: claude without a key)."""
    configured = llm_configured(settings)
    if not names:
        names = ["legacy", "claude" if configured else "scripted"]
        if configured:
            where = f" at {settings.anthropic_base_url}" if settings.anthropic_base_url else ""
            note = f"LLM configured{where}: ran the legacy brain and Claude through the Anthropic adapter"
        else:
            note = "ANTHROPIC_API_KEY is not set: ran the legacy brain and the scripted model (no Claude)"
    else:
        note = "ran " + ", ".join(names) + " as asked"
    if "claude" in names and not configured:
        raise ConfigError("--brain claude needs ANTHROPIC_API_KEY (or ANTHROPIC_BASE_URL) in the settings")
    brains = []
    for name in dict.fromkeys(names):
        if name == "legacy":
            brains.append(Brain("legacy", "legacy"))
        elif name == "scripted":
            from infra.fake_llm.port import InProcessScriptedLLM

            brains.append(Brain("scripted", "llm", InProcessScriptedLLM(), model))
        else:
            brains.append(Brain("claude", "llm", None, model))
    return brains, note


def _cases(path: str) -> list[Any]:
    cases = load_cases(path)
    problems = check_cases(cases, tool_registry())
    if problems:
        raise ConfigError("the dataset names what the product does not have: " + "; ".join(problems))
    return cases


def run(args: argparse.Namespace) -> int:
    try:
        cases = _cases(args.dataset)
        settings = eval_settings()
        if args.peer:
            brains, note = choose_brains(args.brain, settings, args.model) if args.brain else ([], "")
            peers = [peer_brain(name, settings, args.model) for name in dict.fromkeys(args.peer)]
            brains += peers
            note = (
                (note + "; " if note else "")
                + "ran peer "
                + ", ".join(f"{b.peer} (model {b.served_model})" for b in peers)
            )
        else:
            brains, note = choose_brains(args.brain, settings, args.model)
    except ConfigError as exc:
        return fail(f"eval: {exc}", EXIT_USAGE)
    if args.limit is not None:
        cases = cases[: args.limit]
    started = time.monotonic()

    def said(brain: str, done: int, total: int) -> None:  # about every tenth of the set, on stderr
        if done == total or done % max(1, total // 10) == 0:
            progress(f"[{time.monotonic() - started:5.1f} s] {brain}: {done}/{total} cases")

    result = run_eval(
        cases,
        brains,
        settings,
        dataset=str(args.dataset),
        note=note,
        progress=said,
        internal=internal_names(tool_registry()),
    )
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=2))
    else:
        print(render_text(result))
    return EXIT_LEAK if result["leaks"] else EXIT_OK


def check(args: argparse.Namespace) -> int:
    try:
        cases = _cases(args.dataset)
    except ConfigError as exc:
        return fail(f"eval: {exc}", EXIT_USAGE)
    groups: dict[str, int] = {}
    for case in cases:
        groups[case.group] = groups.get(case.group, 0) + 1
    labelled = sum(case.expected.reply_labelled for case in cases)
    if args.json:
        doc = {"cases": len(cases), "valid": True, "groups": dict(sorted(groups.items()))}
        print(json.dumps({**doc, "reply_labelled": labelled}))
        return EXIT_OK
    print(
        f"{len(cases)} cases, valid, {labelled} with reply labels: "
        + ", ".join(f"{g} {n}" for g, n in sorted(groups.items()))
    )
    return EXIT_OK


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def register(sub: Any) -> None:
    p = sub.add_parser("eval", help="the brain's eval set: run it, or check it against the registry")
    commands = p.add_subparsers(dest="eval_command", metavar="COMMAND")
    r = commands.add_parser("run", help="run the eval set through the product and print the figures")
    r.add_argument("--dataset", default=str(DATASET), help="a .jsonl file or a directory of them")
    r.add_argument(
        "--brain",
        action="append",
        choices=BRAINS,
        help="a brain to run (repeatable); default: legacy, then Claude if configured, else scripted",
    )
    r.add_argument(
        "--peer",
        action="append",
        metavar="NAME",
        help="a configured LLM peer to run the set against (repeatable; CHARTER_PEERS or config/peers.json)",
    )
    r.add_argument("--model", help="the model of the LLM brains (default: the flags' model)")
    r.add_argument("--limit", type=_positive, help="only the first N cases")
    r.add_argument("--json", action="store_true", help="print the figures as one JSON document")
    r.set_defaults(func=run)
    c = commands.add_parser("check", help="validate the dataset against the registry (no turn is run)")
    c.add_argument("--dataset", default=str(DATASET), help="a .jsonl file or a directory of them")
    c.add_argument("--json", action="store_true", help="print {cases, valid, groups}")
    c.set_defaults(func=check)
