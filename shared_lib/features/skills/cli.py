"""``charter skills``: an organisation's skills, their versions, tests, approvals and rollbacks.

charter skills list --org ORG [--json]                 every skill: latest and active version, state
charter skills show --org ORG NAME [--version N]       a version (default: the latest): spec, state, test
charter skills test --org ORG NAME [--version N]       run its examples in the sandbox and record it
charter skills approve --org ORG NAME --version N --by USER   enable it (level 6; tested and passed;
                                                       a draft never tested is tested first)
charter skills rollback --org ORG NAME --by USER       back to the previous approved version (none: off)
charter skills propose --org ORG --file SPEC.json [--by USER]  a person's own skill, as a draft

A proposal (the model's in chat, or this command) is only stored: its code runs in the sandbox
when ``test`` or ``approve`` is asked for here, never in the proposing person's turn.

Exit codes: 0 done; 1 a test that fails (an example, or the sandbox refused), a proposal holding a
secret or a personal value (refused, nothing stored), an approval refused
(not level 6, not tested and passed), no active version to roll back, a skill or version not there;
2 bad input (a spec that does not validate, a file that does not read) or no store configured.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from pydantic import ValidationError

from shared_lib.cli.console import NO_STORE, json_text
from shared_lib.cli.operations import runtime_for, store_options
from shared_lib.cli.runner import EXIT_FINDING, EXIT_OK, EXIT_USAGE, fail
from shared_lib.errors import ConfigError
from shared_lib.features.skills import store as skill_store
from shared_lib.features.skills.handlers_active import sandbox_config
from shared_lib.features.skills.state.spec import SkillSpec
from shared_lib.features.skills.store_examples import run_version_test
from shared_lib.runtime import Runtime


def register(subparsers: Any) -> None:
    skills = subparsers.add_parser("skills", help="skills: versions, sandbox tests, approvals, rollbacks")
    sub = skills.add_subparsers(dest="skills_command", metavar="COMMAND")
    ls = sub.add_parser("list", help="the organisation's skills")
    _org(ls)
    ls.set_defaults(func=run_list)
    show = sub.add_parser("show", help="a version: spec, implementation, state, last test")
    _org(show)
    show.add_argument("name")
    show.add_argument("--version", type=int, help="the version (default: the latest)")
    show.set_defaults(func=run_show)
    test = sub.add_parser("test", help="run a version's examples in the sandbox and record the result")
    _org(test)
    test.add_argument("name")
    test.add_argument("--version", type=int, help="the version (default: the latest)")
    test.set_defaults(func=run_test)
    approve = sub.add_parser("approve", help="enable a tested version (a level-6 person)")
    _org(approve)
    approve.add_argument("name")
    approve.add_argument("--version", type=int, required=True)
    approve.add_argument("--by", required=True, help="the approver (level 6 in the directory)")
    approve.set_defaults(func=run_approve)
    back = sub.add_parser(
        "rollback", help="make the previous approved version active (none before it: the skill is off)"
    )
    _org(back)
    back.add_argument("name")
    back.add_argument("--by", required=True, help="who rolls back (level 6 in the directory)")
    back.set_defaults(func=run_rollback)
    propose = sub.add_parser("propose", help="store a person's own skill as a draft")
    _org(propose)
    propose.add_argument("--file", required=True, help="the skill spec (JSON)")
    propose.add_argument("--by", default="operator", help="the author (default: operator)")
    propose.set_defaults(func=run_propose)


def _org(p: argparse.ArgumentParser) -> None:
    p.add_argument("--org", required=True, help="the organisation")
    p.add_argument("--json", action="store_true", help="one JSON object")
    store_options(p)


def _runtime(args: argparse.Namespace) -> Runtime | None:
    try:
        return runtime_for(args)
    except ConfigError:
        return None


def _print(args: argparse.Namespace, data: dict[str, Any], text: str) -> None:
    print(json_text(data) if args.json else text)


def run_list(args: argparse.Namespace) -> int:
    rt = _runtime(args)
    if rt is None:
        return fail(NO_STORE, EXIT_USAGE)
    rows = []
    for skill in skill_store.list_skills(rt.store, args.org):
        latest = skill_store.get_version(rt.store, args.org, skill["name"], int(skill["latest_version"]))
        rows.append(
            {
                "name": skill["name"],
                "display_name": latest["spec"]["display_name"],
                "latest_version": skill["latest_version"],
                "latest_state": latest["state"],
                "active_version": skill.get("active_version"),
                "level": skill_store.spec_of(latest).level,
            }
        )
    lines = [
        f"{r['name']}  {r['display_name']}  level>={r['level']}  latest=v{r['latest_version']} ({r['latest_state']})  "
        f"active={'v' + str(r['active_version']) if r['active_version'] else '-'}"
        for r in rows
    ]
    _print(args, {"org": args.org, "skills": rows}, "\n".join(lines) or "no skills")
    return EXIT_OK


def run_show(args: argparse.Namespace) -> int:
    rt = _runtime(args)
    if rt is None:
        return fail(NO_STORE, EXIT_USAGE)
    try:
        doc = skill_store.get_version(rt.store, args.org, args.name, args.version)
    except skill_store.SkillError as exc:
        return fail(str(exc), EXIT_FINDING)
    test = doc.get("test") or {}
    spec = skill_store.spec_of(doc)
    text = "\n".join(
        [
            f"{doc['name']} v{doc['version']}  state={doc['state']}  sha256={doc['sha256'][:12]}",
            f"level>={spec.level}  {_reads(spec)}",
            f"proposed by {doc.get('proposed_by')} ({doc['spec']['author']})  kind={doc['spec']['kind']}",
            f"test: {'passed' if test.get('passed') else 'failed' if test else 'not run'} {test.get('error_kinds', [])}",
            doc["spec"]["implementation"],
        ]
    )
    _print(args, {**doc, "level": spec.level}, text)
    return EXIT_OK


def _reads(spec: SkillSpec) -> str:
    """What a version reads of the organisation, with each collection's level."""
    levels = sandbox_config().readable
    return "reads: " + (", ".join(f"{c} (level {levels[c]})" for c in spec.reads) or "nothing")


def run_test(args: argparse.Namespace) -> int:
    rt = _runtime(args)
    if rt is None:
        return fail(NO_STORE, EXIT_USAGE)
    try:
        version, state, report = run_version_test(
            rt.store, args.org, args.name, args.version, sandbox_config(), rt.clock()
        )
    except skill_store.SkillError as exc:
        return fail(str(exc), EXIT_FINDING)
    lines = [f"{args.name} v{version}: {state}"] + [
        f"  example {r['index']}: {'ok' if r['ok'] else 'FAILED'} {r['error_kind'] or ''} {r['error']}".rstrip()
        for r in report["examples"]
    ]
    _print(args, {"name": args.name, "version": version, "state": state, **report}, "\n".join(lines))
    return EXIT_OK if report["passed"] else EXIT_FINDING


def run_approve(args: argparse.Namespace) -> int:
    rt = _runtime(args)
    if rt is None:
        return fail(NO_STORE, EXIT_USAGE)
    try:
        skill_store.check_approver(rt.store, args.org, args.by)  # before any code of it runs
        doc = skill_store.get_version(rt.store, args.org, args.name, args.version)
        if doc["state"] == "draft":  # never tested: the approval tests it first
            _, state, report = run_version_test(
                rt.store, args.org, args.name, args.version, sandbox_config(), rt.clock()
            )
            if state != "tested":
                return fail(
                    f"{args.name} v{args.version} failed its sandbox test {report['error_kinds']}: not approved",
                    EXIT_FINDING,
                )
        skill_store.approve(rt.store, args.org, args.name, args.version, by=args.by, now=rt.clock())
        spec = skill_store.spec_of(skill_store.get_version(rt.store, args.org, args.name, args.version))
    except skill_store.SkillError as exc:
        return fail(str(exc), EXIT_FINDING)
    _print(
        args,
        {"name": args.name, "active_version": args.version, "level": spec.level, "reads": spec.reads},
        f"{args.name} v{args.version} is active  level>={spec.level}  {_reads(spec)}",
    )
    return EXIT_OK


def run_rollback(args: argparse.Namespace) -> int:
    rt = _runtime(args)
    if rt is None:
        return fail(NO_STORE, EXIT_USAGE)
    try:
        version = skill_store.rollback(rt.store, args.org, args.name, by=args.by, now=rt.clock())
    except skill_store.SkillError as exc:
        return fail(str(exc), EXIT_FINDING)
    text = f"{args.name}: v{version} is active again" if version else f"{args.name}: no version is active"
    _print(args, {"name": args.name, "active_version": version}, text)
    return EXIT_OK


def run_propose(args: argparse.Namespace) -> int:
    rt = _runtime(args)
    if rt is None:
        return fail(NO_STORE, EXIT_USAGE)
    try:
        with open(args.file, encoding="utf-8") as f:
            raw = json.load(f)
        spec = SkillSpec.model_validate({**raw, "author": args.by} if isinstance(raw, dict) else raw)
    except (OSError, ValueError) as exc:
        detail = exc.errors()[:3] if isinstance(exc, ValidationError) else exc
        return fail(f"skill spec {args.file}: {detail}", EXIT_USAGE)
    try:
        version, created = skill_store.propose(rt.store, args.org, spec, by=args.by, now=rt.clock())
    except skill_store.SkillError as exc:
        return fail(str(exc), EXIT_FINDING)
    text = f"{spec.name} v{version}: {'a new draft' if created else 'the same code as this version'}"
    _print(args, {"name": spec.name, "version": version, "created": created}, text)
    return EXIT_OK
