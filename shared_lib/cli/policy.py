"""``charter policy``: operators' commands for the policy.

* ``charter policy check`` — one JSON object on stdin (proposal, user, directory, now),
  one JSON object on stdout: the guardian verdict and the authorization result. Exit 0;
  malformed input prints the problem on stderr and exits 2.
* ``charter policy validate [FILE]`` — validate a policy file (default: the active one)
  and print its version. Exit 0 valid, 2 a file that does not parse or validate (bad input,
  as ``flags validate``).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from pydantic import ValidationError

from shared_lib.cli.runner import fail
from shared_lib.errors import ConfigError
from shared_lib.policy.config import POLICY_FILE, PolicyConfig, load_policy_config, parse_policy_config
from shared_lib.policy.effective import Policy
from shared_lib.policy.simulator import SimulationInput, simulate
from shared_lib.wiring.features import tool_registry

EXIT_OK, EXIT_USAGE = 0, 2


def register(subparsers: Any) -> None:
    policy = subparsers.add_parser("policy", help="check proposals against the policy; validate policy files")
    sub = policy.add_subparsers(dest="policy_command", metavar="SUBCOMMAND", required=True)
    check = sub.add_parser("check", help="simulate the guardian and the authorization gate (JSON on stdin)")
    check.add_argument("--policy", help="policy file to use instead of the active one")
    check.set_defaults(func=run_check)
    validate = sub.add_parser("validate", help="validate a policy file")
    validate.add_argument(
        "file", nargs="?", help=f"policy file (default: CHARTER_POLICY or {POLICY_FILE.name})"
    )
    validate.add_argument("--json", action="store_true", help='print {"valid": true, "version": …}')
    validate.set_defaults(func=run_validate)


def _error(message: str) -> int:
    return fail(message, EXIT_USAGE)


def _describe(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(x) for x in e['loc']) or '(root)'}: {e['msg']}" for e in exc.errors()[:8]
    )


def _config(path: str | None) -> PolicyConfig:
    return load_policy_config(path) if path else load_policy_config()


def run_check(args: argparse.Namespace) -> int:
    raw = sys.stdin.read()
    try:
        data = json.loads(raw)
    except ValueError as exc:
        return _error(f"input is not JSON: {exc}")
    if not isinstance(data, dict):
        return _error("input must be one JSON object with 'proposal' and 'user'")
    try:
        sim = SimulationInput.model_validate(data)
    except ValidationError as exc:
        return _error(f"invalid input: {_describe(exc)}")
    try:
        config = _config(args.policy)
    except ConfigError as exc:
        return _error(f"{args.policy or 'the active policy'}: {exc}")
    out = simulate(sim, registry=tool_registry(), config=config)
    print(json.dumps(out, ensure_ascii=False, sort_keys=True))
    return EXIT_OK


def run_validate(args: argparse.Namespace) -> int:
    path = args.file
    try:
        if path:
            with open(path, encoding="utf-8") as f:
                config = parse_policy_config(json.load(f), source=path)
        else:
            config = load_policy_config()
    except (OSError, ValueError, ConfigError) as exc:
        return fail(f"{path or 'the active policy'}: {exc}", EXIT_USAGE)
    version = Policy.build(config, tool_registry()).version
    if args.json:
        print(json.dumps({"valid": True, "version": version}))
    else:
        print(f"{path or POLICY_FILE.name}: valid (version {version})")
    return EXIT_OK
