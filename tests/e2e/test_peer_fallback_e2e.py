"""LLM peer fallback on the whole local stack (seed 001 §6, issue 19). The stack's peers are the
fake Anthropic API (``anthropic``), Claude on Vertex AI (``vertex``: the second fake's Vertex
routes) and an OpenAI-compatible local model (``local``: the fake OpenAI server). The first
answers 529 to everything → every turn is still answered, its LLM calls served by Vertex with the
reason recorded; Vertex goes down too → the local model serves them over the OpenAI wire → both
recover → within a few health intervals (``CHARTER_PEER_HEALTH_SECONDS=2`` on the stack) traffic
returns to the first. No turn is lost: every turn sent has its reply and its record."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
import uuid
from typing import Any

import pytest

from tests.e2e import waits

ORG = "demo"
USER = "u-suzuki"
OVERLOADED = {"name": "overloaded", "rules": [{"fault": {"kind": "status", "status": 529}}]}
CLEAR = {"name": "clear", "rules": []}


def scenario(stack, body: dict[str, Any], fake: str = "fake_llm") -> None:
    req = urllib.request.Request(
        stack.url(fake) + "/_admin/scenario",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert resp.status == 200


def ask(stack, room: str) -> str:
    text = f"体調管理のコツを教えて（{uuid.uuid4().hex[:8]}）"  # a CHAT question: the LLM arm answers
    resp = stack.send("http", text, org=ORG, room=room, user=USER)
    assert resp.status == 200, resp.body
    return str(resp.body["turn_ids"][0])


def replied(stack, turn_id: str) -> bool:
    return any(
        isinstance(s.get("body"), dict) and str(s["body"].get("turn_id", "")).startswith(turn_id)
        for s in stack.fake_channel_sent()
    )


def answered_calls(stack, turn_id: str) -> list[dict[str, Any]]:
    """The turn's LLM calls that were answered (its call log entries), serving calls only."""
    rows = stack.store.query(f"orgs/{ORG}/llm_calls", where=[("turn_id", "==", turn_id)])
    return [doc for _, doc in rows if doc.get("status") == "success" and not doc.get("shadow")]


def served_by(stack, turn_id: str) -> set[str]:
    stack.record(ORG, turn_id)  # the turn is finished
    calls = stack.wait_for(lambda: answered_calls(stack, turn_id))
    return {c["peer"] for c in calls}


def peers_list(stack) -> list[dict[str, Any]]:
    """``charter peers list --json`` as an operator runs it: in the stack's work folder, nothing
    exported (the settings come from what ``charter local up`` left in ``.charter/``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHARTER_", "ANTHROPIC_"))}
    env.pop("FIRESTORE_EMULATOR_HOST", None)
    env.pop("PUBSUB_EMULATOR_HOST", None)
    out = subprocess.run(
        [sys.executable, "-m", "shared_lib.cli", "peers", "list", "--json"],
        cwd=stack.workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return list(json.loads(out.stdout)["peers"])


@pytest.mark.e2e
def test_the_first_peer_down_then_back_loses_no_turn(local_stack):
    room = f"room-{uuid.uuid4().hex[:8]}"
    sent: list[str] = []
    scenario(local_stack, OVERLOADED)
    try:
        # WHEN the first peer answers 529 to every request
        down = [ask(local_stack, room) for _ in range(3)]
        sent += down
        # THEN every turn is answered, its LLM calls served by the second peer
        for turn_id in down:
            assert local_stack.wait_for(lambda t=turn_id: replied(local_stack, t))
            assert served_by(local_stack, turn_id) == {"vertex"}
        # AND the fallback is recorded with its reason on the answered calls (the first failed
        # after its retries; later calls skip the peer marked unhealthy for every instance)
        reasons = [
            f["reason"] for t in down for c in answered_calls(local_stack, t) for f in c.get("fallbacks", [])
        ]
        assert any(r.startswith("llm_unavailable") for r in reasons), reasons
        assert any(r.startswith("unhealthy: ") for r in reasons), reasons
        failed = local_stack.store.query(f"orgs/{ORG}/llm_calls", where=[("turn_id", "==", down[0])])
        assert any(d["peer"] == "anthropic" and d["status"] == "error" for _, d in failed)
        # AND the operator sees the functions' three peers, the first one unhealthy
        rows = {r["name"]: r for r in peers_list(local_stack)}
        assert [rows[n]["kind"] for n in ("anthropic", "vertex", "local")] == [
            "anthropic",
            "vertex",
            "openai_compatible",
        ]
        assert rows["local"]["local"] is True and rows["anthropic"]["health"]["healthy"] is False
        # WHEN Vertex answers 529 too
        scenario(local_stack, OVERLOADED, "fake_llm_fallback")
        both = [ask(local_stack, room) for _ in range(2)]
        sent += both
        # THEN the local model serves the turns, over the OpenAI-compatible wire
        for turn_id in both:
            assert local_stack.wait_for(lambda t=turn_id: replied(local_stack, t))
            assert served_by(local_stack, turn_id) == {"local"}
    finally:
        # WHEN they recover
        scenario(local_stack, CLEAR)
        scenario(local_stack, CLEAR, "fake_llm_fallback")
    # THEN within a few probe intervals new turns are served by the first peer again (each of
    # them a turn answered within its budgets: the bound is one turn's and three probe intervals)
    end = time.monotonic() + waits.scaled(local_stack.budgets.turn + 3 * local_stack.budgets.peer_health)
    back: set[str] = set()
    while time.monotonic() < end and back != {"anthropic"}:
        turn_id = ask(local_stack, room)
        sent.append(turn_id)
        back = served_by(local_stack, turn_id)
        if back != {"anthropic"}:
            time.sleep(1.0)
    assert back == {"anthropic"}
    # AND no turn was lost: every one sent has its reply and its record
    for turn_id in sent:
        assert local_stack.wait_for(lambda t=turn_id: replied(local_stack, t))
        assert local_stack.record(ORG, turn_id)["record_id"] == turn_id
