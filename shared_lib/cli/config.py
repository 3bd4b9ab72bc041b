"""``charter config show [--json]``: the settings an operator command runs with.

Every field of ``shared_lib.settings.Settings``: its variable, its effective value and where
the value comes from (``environment``, the ``.charter/…/charter.env`` file that ``charter local
up`` or ``charter demo`` left, or ``default``). A secret (a ``SecretStr`` field, one Terraform
provides as a Secret Manager reference, or a name that says token, secret, password, key or
webhook URL) is shown as ``set`` or ``unset``, never its value.

Exit codes: 0 shown, 2 the settings do not validate (the variable and the problem are said).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any, get_args

from pydantic import SecretStr

from shared_lib.cli.console import json_text
from shared_lib.settings import Settings

_SECRET_NAME = re.compile(r"SECRET|TOKEN|PASSWORD|_KEY$|WEBHOOK_URL|TENANTS")


def is_secret(name: str, info: Any) -> bool:
    """Whether the setting read from ``name`` must never be printed."""
    extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
    typed = info.annotation is SecretStr or SecretStr in get_args(info.annotation)
    return typed or extra.get("deploy") == "secret" or bool(_SECRET_NAME.search(name))


def _shown(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    return value


def rows(settings: Settings, env_file: Path | None) -> list[dict[str, Any]]:
    """One row per field: ``name``, ``field``, ``value`` (secrets: ``set``/``unset``), ``source``."""
    origins = Settings.origins(env_file)
    out = []
    for field, info in Settings.model_fields.items():
        extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
        name = str(extra.get("env", field))
        value = getattr(settings, field)
        if is_secret(name, info):
            raw = value.get_secret_value() if isinstance(value, SecretStr) else value
            value = "set" if raw not in (None, "") else "unset"
        out.append({"name": name, "field": field, "value": _shown(value), "source": origins[name]})
    return out


def _text(value: Any) -> str:
    if value is None:
        return "(unset)"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict | list):
        return json_text(value) if value else "(none)"
    return str(value)


def _show(args: argparse.Namespace) -> int:
    from shared_lib.wiring.composition import operator_env_file

    env_file = operator_env_file()
    settings = Settings.from_env(env_file=env_file)  # ConfigError: one line, exit 2 (runner)
    found = rows(settings, env_file)
    if args.json:
        print(json_text({"settings_file": str(env_file) if env_file else None, "settings": found}))
        return 0
    width = max(len(r["name"]) for r in found)
    print(f"{'variable':<{width}}  {'source':<12} value")
    for r in found:
        source = "file" if r["source"] not in ("environment", "default") else r["source"]
        print(f"{r['name']:<{width}}  {source:<12} {_text(r['value'])}")
    print(f"file: {env_file}" if env_file else "file: none (no .charter settings file is read)")
    return 0


def register(sub: Any) -> None:
    """The ``config`` command and its ``show`` action."""
    config = sub.add_parser("config", help="the effective settings (secrets masked)")
    csub = config.add_subparsers(dest="config_command", metavar="ACTION")
    p = csub.add_parser("show", help="every setting: variable, value, where it comes from")
    p.add_argument("--json", action="store_true", help="one JSON document")
    p.set_defaults(func=_show)
