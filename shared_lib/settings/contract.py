"""The deploy contract the settings model implies: what each Cloud Run service reads.

Each field of ``Settings`` names the targets that read it and how Terraform must provide it
(see ``shared_lib.settings.model``); a static test holds ``terraform/`` to
``deploy_contract(target)`` for every target of ``topology.json``.
"""

from __future__ import annotations

from typing import Any, Literal

from shared_lib.settings.fields import ALL, _meta
from shared_lib.settings.model import Settings


def fields_for(target: str) -> dict[str, dict[str, Any]]:
    """Variable name -> metadata of every setting ``target`` reads."""
    out = {}
    for info in Settings.model_fields.values():
        meta = _meta(info)
        if ALL in meta["targets"] or target in meta["targets"]:
            out[meta["env"]] = meta
    return out


def required_names(target: str) -> list[str]:
    return [name for name, meta in fields_for(target).items() if meta["required"]]


def deploy_contract(target: str) -> dict[str, Literal["env", "secret"]]:
    """What Terraform must give the Cloud Run service of ``target``: name -> how.

    >>> deploy_contract("brain")["ANTHROPIC_API_KEY"]
    'secret'
    >>> "ANTHROPIC_API_KEY" in deploy_contract("ingress")
    False
    """
    return {name: meta["deploy"] for name, meta in fields_for(target).items() if meta["deploy"]}
