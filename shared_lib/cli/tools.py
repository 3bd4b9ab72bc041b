"""``charter tools``: what the brain is offered and what the charter requires of it.

charter tools list [--json]   every tool: its Anthropic definition (name, description,
                              input_schema), minimum level, danger class, enabled flag
charter tools check           the seed §7.1b tool addition checklist (exit 1 on problems)

With ``--org ORG`` (and the store options) both also take the organisation's approved skills
(``skill_<name>``, seed 001 §23.5): the registry that organisation's turns use.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from shared_lib.cli.console import NO_STORE
from shared_lib.cli.operations import runtime_for, store_options
from shared_lib.cli.runner import fail
from shared_lib.errors import ConfigError
from shared_lib.tools.checklist import registry_problems
from shared_lib.tools.converter import tool_definition, validate_input_schema
from shared_lib.tools.registry import ToolRegistry
from shared_lib.wiring.features import tool_registry


def tool_rows(registry: ToolRegistry) -> list[dict[str, Any]]:
    rows = []
    for spec in registry:
        definition = tool_definition(spec)
        rows.append(
            {
                **definition,
                "min_level": spec.min_level,
                "danger": spec.danger,
                "danger_action": spec.danger_action,
                "requires_confirmation": spec.requires_confirmation,
                "enabled": spec.enabled,
                "effect": spec.effect_kind,
                "timeout_seconds": spec.timeout_seconds,
                "schema_valid": not validate_input_schema(definition["input_schema"]),
                "skill": "skill" in spec.tags,
            }
        )
    return rows


def _text(rows: list[dict[str, Any]]) -> str:
    out = []
    for r in rows:
        action = f"/{r['danger_action']}" if r["danger_action"] else ""
        out.append(
            f"{r['name']}  level>={r['min_level']}  danger={r['danger']}{action}  "
            f"enabled={'yes' if r['enabled'] else 'no'}  confirm={'yes' if r['requires_confirmation'] else 'no'}  "
            f"effect={r['effect']}"
        )
        out += [f"    {line}" for line in r["description"].splitlines()]
        schema = json.dumps(r["input_schema"], ensure_ascii=False, indent=2)
        out += ["    input_schema:"] + [f"      {line}" for line in schema.splitlines()]
        out.append("")
    return "\n".join(out)


def _load(args: argparse.Namespace) -> ToolRegistry | None:
    try:
        registry = tool_registry()
    except ConfigError as exc:
        fail(f"tools: {exc}")
        return None
    if not getattr(args, "org", None):
        return registry
    try:
        rt = runtime_for(args)
    except ConfigError:
        fail(NO_STORE)
        return None
    return rt.registry_of(args.org)


def cmd_list(args: argparse.Namespace) -> int:
    registry = _load(args)
    if registry is None:
        return 2
    rows = tool_rows(registry)
    if args.json:
        print(json.dumps(rows, ensure_ascii=False, indent=2))
    else:
        print(_text(rows))
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    registry = _load(args)
    if registry is None:
        return 2
    problems = registry_problems(registry)
    if args.json:
        print(json.dumps({"tools": len(registry), "problems": problems}, ensure_ascii=False))
        return 1 if problems else 0
    for p in problems:
        print(p)
    print(f"{len(registry)} tools, {len(problems)} problem(s)")
    return 1 if problems else 0


def register(subparsers: Any) -> None:
    tools = subparsers.add_parser("tools", help="the tool registry (list, checklist)")
    sub = tools.add_subparsers(dest="tools_command", metavar="SUBCOMMAND")
    ls = sub.add_parser("list", help="every tool with its Anthropic definition, level, danger, enabled")
    ls.add_argument("--json", action="store_true", help="machine-readable output")
    _org(ls)
    ls.set_defaults(func=cmd_list)
    check = sub.add_parser("check", help="the tool addition checklist (seed §7.1b)")
    check.add_argument("--json", action="store_true", help="print {tools, problems}")
    _org(check)
    check.set_defaults(func=cmd_check)


def _org(p: argparse.ArgumentParser) -> None:
    p.add_argument("--org", help="also the organisation's approved skills (needs a store)")
    store_options(p)
