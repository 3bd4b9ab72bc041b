"""``charter persona``: the persona's immutable core, its pin, and an organisation's extension.

charter persona show [--org ORG] [--json]     the core, the organisation's extension, the merged view
charter persona verify [--core FILE]          what a service checks at start: the core (or FILE)
                                              against the pinned SHA-256, the identity text
                                              against the hash the core pins
charter persona diff [--core FILE] [--org ORG]  FILE against the shipped core; with --org, what
                                              the extension adds on top of the core

The pin is the persona file's ``core_sha256``, or ``CHARTER_PERSONA_CORE_SHA256`` when set (what a
process checks at start: ``persona.verify_persona``, which ``verify`` calls too, on the persona
``CHARTER_PERSONA`` names, so it exits 1 on exactly what would stop a service). ``--org`` reads the store
(``--store``/``--project``, or what ``charter local up`` / ``charter demo`` left).

Exit codes: 0 ok (verify: the pinned core; diff: no difference), 1 a finding (verify: one line
naming the file, its hash and the pinned one; diff: FILE differs from the core; what an
extension adds is not a finding), 2 bad input (a missing or
unreadable file, no store configured for --org).
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from pathlib import Path
from typing import Any

from shared_lib.cli.operations import runtime_for, store_options
from shared_lib.cli.runner import EXIT_FINDING, EXIT_OK, fail
from shared_lib.errors import ConfigError
from shared_lib.features.persona_learning.store import load_ext
from shared_lib.persona.catalogue import Persona, load_persona, verify_persona
from shared_lib.persona.core import core_sha256
from shared_lib.persona.ext import flat, merged_view
from shared_lib.settings import Settings


def register(subparsers: Any) -> None:
    persona = subparsers.add_parser(
        "persona", help="the persona's core (pinned) and an organisation's extension"
    )
    sub = persona.add_subparsers(dest="persona_command", metavar="COMMAND")
    show = sub.add_parser("show", help="the core, the organisation's extension and the merged view")
    show.add_argument("--org", help="the organisation whose extension to read (needs a store)")
    show.add_argument("--json", action="store_true", help="one JSON object")
    store_options(show)
    show.set_defaults(func=run_show)
    verify = sub.add_parser("verify", help="the core (or FILE) against the pinned SHA-256")
    verify.add_argument("--core", type=Path, help="a core file to check (default: the persona's core)")
    verify.set_defaults(func=run_verify)
    diff = sub.add_parser("diff", help="FILE against the shipped core; --org: what the extension adds")
    diff.add_argument("--core", type=Path, help="a core file to compare with the shipped one")
    diff.add_argument("--org", help="the organisation whose extension to list on top of the core")
    store_options(diff)
    diff.set_defaults(func=run_diff)


def _persona() -> tuple[Persona, str]:
    """The configured persona (``CHARTER_PERSONA``) and its pin (the setting over the persona file's)."""
    settings = Settings.from_env()
    persona = load_persona(str(settings.persona_file) if settings.persona_file else None)
    return persona, settings.persona_core_sha256 or persona.core_sha256


def _ext(args: argparse.Namespace) -> dict[str, Any]:
    return load_ext(runtime_for(args).store, args.org) if args.org else {}


def run_show(args: argparse.Namespace) -> int:
    persona, pin = _persona()
    core = persona.core()
    ext = _ext(args)
    out = {
        "core_file": str(persona.core_path()),
        "core_sha256": core_sha256(persona.core_path()),
        "pinned_sha256": pin,
        "core": core.model_dump(mode="json"),
        "org": args.org,
        "extension": flat(ext),
        "merged": merged_view(core, ext),
    }
    if args.json:
        sys.stdout.write(json.dumps(out, ensure_ascii=False, indent=2, default=str) + "\n")
        return EXIT_OK
    lines = [f"core       {out['core_file']}", f"sha256     {out['core_sha256']} (pinned {pin or '-'})"]
    lines += [
        f"  {section}.{k} = {json.dumps(v, ensure_ascii=False)}" for section, k, v in _items(out["core"])
    ]
    lines.append(f"extension  {args.org or '(no --org)'}")
    lines += [f"  {k} = {json.dumps(v, ensure_ascii=False)}" for k, v in out["extension"].items()] or [
        "  (none)"
    ]
    sys.stdout.write("\n".join(lines) + "\n")
    return EXIT_OK


def _items(core: dict[str, Any]) -> list[tuple[str, str, Any]]:
    return [(s, k, v) for s, fields in core.items() for k, v in fields.items()]


def run_verify(args: argparse.Namespace) -> int:
    """What a service checks at start (``persona.verify_persona``, the same function): the core's
    bytes against the pin and the identity text against the hash the core pins. ``--core FILE``
    checks FILE in the core's place, with the persona's identity text."""
    try:
        persona, pin = _persona()
        file = args.core or persona.core_path()
        got = core_sha256(file)  # only the bytes count: a one-byte change that breaks the TOML is a mismatch
    except ConfigError as exc:  # a persona file or core that cannot be read is bad input
        return fail(str(exc).splitlines()[0])
    if args.core is not None:
        persona = persona.model_copy(update={"core_file": str(Path(file).resolve())})
    try:
        verify_persona(persona, pin)
    except ConfigError as exc:
        return fail(str(exc).splitlines()[0], EXIT_FINDING)
    prompt = Path(persona.base_dir) / persona.system_prompt_file
    sys.stdout.write(f"persona core {file}: sha256 {got} (the pinned one)\n")
    sys.stdout.write(f"persona system prompt {prompt}: the one the core pins\n")
    return EXIT_OK


def run_diff(args: argparse.Namespace) -> int:
    persona, _ = _persona()
    shipped = persona.core_path()
    lines: list[str] = []
    differs = False
    if args.core is not None:
        try:
            theirs = args.core.read_text(encoding="utf-8").splitlines(keepends=True)
        except (OSError, UnicodeDecodeError) as exc:
            return fail(f"persona core {args.core}: {getattr(exc, 'strerror', None) or exc}")
        ours = shipped.read_text(encoding="utf-8").splitlines(keepends=True)
        lines += difflib.unified_diff(ours, theirs, fromfile=str(shipped), tofile=str(args.core))
        differs = bool(lines)
    if args.org:
        added = flat(_ext(args))
        if added:
            lines += [f"# extension of {args.org} on top of the core (never over it)\n"]
            lines += [f"+ {k} = {json.dumps(v, ensure_ascii=False)}\n" for k, v in added.items()]
    sys.stdout.write("".join(lines))
    return EXIT_FINDING if differs else EXIT_OK
