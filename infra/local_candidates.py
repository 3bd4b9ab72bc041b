"""Candidate revisions on the local stack: what the cloud's tagged revisions at 0 % are locally.

``start()`` adds to a running stack one more functions-framework process per target (every
target but ``admin``, or those given), recorded as ``candidate:<target>``, with
``CHARTER_REVISION=candidate`` so each layer writes that revision in the turn's trail and the
record; then it creates the smoke twins' subscriptions (``topology.json`` ``smoke``) pushing to
the candidate of their target (to the stable process where a target has no candidate). A
normal webhook at the stable ingress is served by the stable processes only; a smoke webhook
(``infra.webhook_sender`` ``smoke=True``) at the candidate ingress (``candidate_ingress_url``)
by the candidates only; ``env`` starts candidates that differ from the stable processes by a
setting. ``stop()`` deletes those subscriptions and stops the candidates by pid;
``local_stack.down()`` stops them with everything else.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from infra import local_stack
from infra.emulators import stop_pids

PREFIX = "candidate:"
REVISION = "candidate"


def component(target: str) -> str:
    return PREFIX + target


def start(
    *,
    root: Path | None = None,
    targets: Iterable[str] | None = None,
    timeout: float = 120.0,
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Start the candidates of ``targets`` (default: all but admin) and their smoke subscriptions.

    ``env`` is what the candidates' environment has besides the stable processes' (a candidate
    built with another setting, e.g. ``CHARTER_CONTEXT_SOURCES_OFF`` for one whose context has
    lost the conversation); the settings model validates it as the process starts."""
    paths = local_stack._paths(root)
    state = local_stack.load_state(root)
    if not state.get("ready"):
        raise RuntimeError(f"no running local stack in {paths.root}: run `charter local up` first")
    kinds = local_stack._targets()
    chosen = [
        t for t in (targets or [t for t in kinds if t != "admin"]) if component(t) not in state["components"]
    ]
    unknown = [t for t in chosen if t not in kinds]
    if unknown:
        raise ValueError(f"unknown targets {unknown}")
    _emulator_env(state)
    env = local_stack.function_env(state, {**(env or {}), "CHARTER_REVISION": REVISION})
    try:
        for target in chosen:
            local_stack.spawn_function(paths, state, component(target), target, kinds[target], env)
        for target in chosen:
            local_stack._wait(state, component(target), timeout)
        if "ingress" in chosen and not local_stack._until_healthy(
            state["components"][component("ingress")], "ingress", timeout
        ):
            raise RuntimeError(f"the candidate ingress is not healthy (see {paths.logs})")
        _create_smoke_subscriptions(state)
    except BaseException:
        stop(root=root)
        raise
    if component("ingress") in state["components"]:
        state["candidate_ingress_url"] = state["components"][component("ingress")]["url"]
    local_stack._save(paths, state)
    return state


def _emulator_env(state: dict[str, Any]) -> None:
    """Point this process's Pub/Sub client at the stack's emulator (as ``local_stack.up`` does)."""
    os.environ["PUBSUB_EMULATOR_HOST"] = f"127.0.0.1:{state['components']['pubsub']['port']}"


def _create_smoke_subscriptions(state: dict[str, Any]) -> None:
    from google.cloud import pubsub_v1  # type: ignore[attr-defined]

    from shared_lib.delivery.topology import TOPOLOGY

    client = pubsub_v1.SubscriberClient()
    created = state.setdefault("smoke_subscriptions", [])
    for name, sub in TOPOLOGY.smoke_subscriptions.items():
        if name in created:
            continue
        comps = state["components"]
        endpoint = (comps.get(component(sub.target)) or comps.get(sub.target) or {}).get("url")
        if endpoint is None:
            continue
        client.create_subscription(
            request=local_stack.subscription_request(state["project"], name, sub, endpoint)
        )
        created.append(name)


def stop(*, root: Path | None = None) -> list[str]:
    """Delete the smoke subscriptions and stop every candidate process by pid."""
    paths = local_stack._paths(root)
    state = local_stack.load_state(root)
    if not state:
        return []
    if state.get("smoke_subscriptions"):
        from google.api_core.exceptions import GoogleAPICallError
        from google.cloud import pubsub_v1  # type: ignore[attr-defined]

        _emulator_env(state)
        client = pubsub_v1.SubscriberClient()
        for name in state.pop("smoke_subscriptions"):
            # already gone when the emulator stopped first: it forgets everything
            with contextlib.suppress(GoogleAPICallError):
                client.delete_subscription(
                    subscription=client.subscription_path(state["project"], name), timeout=10
                )
    stopped = [n for n in state.get("components", {}) if n.startswith(PREFIX)]
    stop_pids([int(state["components"].pop(name)["pid"]) for name in stopped])  # side by side
    state.pop("candidate_ingress_url", None)
    local_stack._save(paths, state)
    return stopped
