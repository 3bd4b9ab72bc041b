"""``infra.recall_gate``: the pipeline step's run, its record and its exit code.

The ingresses are one fake (an ``httpx`` transport over a handler): a normal webhook is served by
the "stable" revision and a smoke webhook by the "candidate", each writing the turn's record as the
observer does; the candidate either remembers the conversation the stable side heard or has lost it.
"""

from __future__ import annotations

import json
import random
import uuid
from typing import Any

import httpx
import pytest

from infra.recall_gate import finish, run_recall_gate
from infra.smoke_runner import LAYERS
from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.channels.secrets import ChannelSecrets
from shared_lib.rollout.recall import make_probe


class FakeIngresses:
    """Both ingresses: what the stable side heard per conversation, and how the candidate answers."""

    def __init__(
        self, store: MemoryStore, *, remembers: bool = True, arm: str = "llm", stable: str = "stable"
    ):
        self.store, self.remembers, self.arm, self.stable = store, remembers, arm, stable
        self.heard: dict[str, list[str]] = {}

    def handle(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        smoke = "x-charter-smoke" in request.headers
        room, text, turn_id = body["room_id"], body["text"], f"T{uuid.uuid4().hex[:10]}"
        if smoke:
            said = " ".join(self.heard.get(room, [])) if self.remembers else ""
            reply = (
                f"覚えてるウル！「{said}」って聞いたウル"
                if said
                else "ごめんなさいウル、何の話か分からないウル…"
            )
        else:
            self.heard.setdefault(room, []).append(text)
            reply = "了解ウル！"
        revision = "charter-x-c-abc1234" if smoke else self.stable
        self.store.set(
            f"orgs/{body['org_id']}/observability/{turn_id}",
            {
                "smoke": smoke,
                "revisions": dict.fromkeys(LAYERS, revision),
                "final_response": reply,
                "arm": self.arm,
            },
        )
        return httpx.Response(200, json={"turn_ids": [turn_id]})


def run(store: MemoryStore, ingresses: FakeIngresses, run_id: str = "build-7") -> Any:
    client = httpx.Client(transport=httpx.MockTransport(ingresses.handle))
    return run_recall_gate(
        "http://stable",
        "http://candidate",
        store,
        expect="c-abc1234",
        run_id=run_id,
        probe=make_probe(run_id, random.Random(run_id)),
        secrets=ChannelSecrets.local_defaults(),
        client=client,
        sleep=lambda s: None,
    )


def test_a_candidate_that_remembers_passes_and_the_step_exits_0(capsys, tmp_path):
    # GIVEN a candidate that knows what the stable side heard
    store = MemoryStore()
    ingresses = FakeIngresses(store)
    # WHEN the gate runs
    result = run(store, ingresses)
    # THEN it seeded one conversation of the smoke tenant with the run's fact, and asked the candidate in it
    assert result.ok and list(result.turns) == ["seed1", "seed2", "recall"]
    assert ingresses.heard == {result.room: list(result.probe.seed_turns)}
    assert result.room.startswith("recall-build-7-")
    # AND the step exits 0, its record says passed
    assert finish(result, tmp_path / "r.json") == 0
    assert "recall gate passed (RECALLED)" in capsys.readouterr().out
    doc = store.get("rollout_recall_checks/build-7")
    assert doc["passed"] is True and doc["candidate"] == "c-abc1234" and doc["turns"] == result.turns


def test_a_candidate_that_forgot_is_refused_the_step_exits_1_and_the_record_says_why(capsys, tmp_path):
    # GIVEN a candidate that has lost the conversation
    store = MemoryStore()
    result = run(store, FakeIngresses(store, remembers=False))
    # WHEN the step finishes
    code = finish(result, tmp_path / "recall_gate.json")
    # THEN it exits 1 (no traffic shift), saying why on stderr
    err = capsys.readouterr().err
    assert code == 1 and not result.ok
    assert "recall gate FAILED (DOES_NOT_KNOW)" in err and "the stable revisions keep serving" in err
    assert "rollout_recall_checks/build-7" in err
    # AND the record and the report file hold the code, the reply and the question
    doc = store.get("rollout_recall_checks/build-7")
    assert (doc["passed"], doc["code"]) == (False, "DOES_NOT_KNOW")
    assert (
        doc["reply"] == "ごめんなさいウル、何の話か分からないウル…"
        and doc["question"] == result.probe.question
    )
    shown = json.loads((tmp_path / "recall_gate.json").read_text(encoding="utf-8"))
    assert (
        shown["passed"] is False
        and shown["code"] == "DOES_NOT_KNOW"
        and shown["record"] == result.record_path
    )


def test_a_seed_turn_served_by_the_candidate_stops_the_run_unjudged(capsys):
    # GIVEN a "stable" ingress that already runs the candidate (the split is not what the step thinks)
    store = MemoryStore()
    result = run(store, FakeIngresses(store, stable="charter-x-c-abc1234"))
    # THEN nothing is asked of the candidate, nothing judged, and the step fails naming the turn
    assert "recall" not in result.turns and result.verdict is None
    assert result.problems and "did not run on the stable revisions" in result.problems[0]
    assert finish(result) == 1
    assert "recall gate FAILED (NOT_JUDGED)" in capsys.readouterr().err
    assert store.get("rollout_recall_checks/build-7")["code"] == "NOT_JUDGED"


def test_a_smoke_tenant_on_the_legacy_brain_is_not_judged_and_says_so(capsys):
    # GIVEN flags that serve the smoke tenant with the legacy keyword brain (no conversation kept)
    store = MemoryStore()
    result = run(store, FakeIngresses(store, remembers=False, arm="legacy"))
    # THEN the step passes, and its line and record say that nothing was judged and why
    assert finish(result) == 0
    assert "recall gate passed (NOT_APPLICABLE)" in capsys.readouterr().out
    assert store.get("rollout_recall_checks/build-7")["code"] == "NOT_APPLICABLE"


@pytest.mark.parametrize("status", [401, 503])
def test_a_stable_ingress_that_refuses_the_seed_fails_the_step(status):
    # GIVEN a stable ingress that refuses the webhook WHEN the gate runs THEN it stops at the first seed
    store = MemoryStore()
    client = httpx.Client(
        transport=httpx.MockTransport(lambda r: httpx.Response(status, json={"error": "x"}))
    )
    result = run_recall_gate(
        "http://stable",
        "http://candidate",
        store,
        expect="c-abc1234",
        run_id="build-8",
        secrets=ChannelSecrets.local_defaults(),
        client=client,
        sleep=lambda s: None,
    )
    assert not result.ok and result.problems[0].startswith(
        f"seed turn 1: the stable ingress answered {status}"
    )
    doc = store.get("rollout_recall_checks/build-8")
    assert doc["code"] == "NOT_JUDGED" and doc["message"] == result.problems[0] and doc["turns"] == {}
