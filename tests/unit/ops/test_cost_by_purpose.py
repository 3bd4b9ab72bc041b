"""Cost per purpose of call (issue 19): a turn phrased by Best-of-N through the in-process chain,
then ``charter cost`` tells what the proposal, the phrasing candidates and the judge cost."""

from __future__ import annotations

import json

import pytest
from ops_fakes import ORG, TASK_CREATE, send

from shared_lib.cli import build_parser
from shared_lib.features.best_of_n import steps as best_of_n
from shared_lib.flags import FLAGS_DOC, FlagsProvider, flags_store_doc, load_flags_file
from shared_lib.flags.document import BestOfN
from shared_lib.telemetry.llm_calls import LLMCallLog


def charter(rt, capsys, *argv: str) -> tuple[int, str]:
    args = build_parser().parse_args(list(argv))
    args.runtime = rt
    code = args.func(args)
    return code, capsys.readouterr().out


def test_charter_cost_counts_a_best_of_n_turn_per_purpose(rt, capsys, monkeypatch):
    # GIVEN Best-of-N on for the organisation, the call log wired in, and the turn held at
    # difficulty 4 (six candidates and the judge: the task request itself is a difficulty-1 turn)
    doc = load_flags_file().model_copy(
        update={"brain_mode": "llm", "best_of_n": BestOfN(orgs=[ORG], max_cost_usd_per_turn=1.0)}
    )
    rt.store.set(FLAGS_DOC, flags_store_doc(doc))
    rt.flags = FlagsProvider(rt.store, ttl_seconds=0)
    rt.llm = LLMCallLog(rt.llm, rt.store, prices=rt.prices)
    monkeypatch.setattr(best_of_n, "estimate", lambda *a, **k: 4)
    # WHEN one turn is served through the chain and today's cost is asked for
    turn_id = send(rt, TASK_CREATE)
    code, out = charter(rt, capsys, "cost", "--org", ORG, "--json")
    report = json.loads(out)
    # THEN the scripted judge ran, and the cost is split by purpose, adding up to the day's cost
    calls = [d for _, d in rt.store.query(f"orgs/{ORG}/llm_calls")]
    by_type = {t: sum(1 for c in calls if c["call_type"] == t) for t in {c["call_type"] for c in calls}}
    assert by_type["integration"] == 6 and by_type["evaluation"] == 1 and by_type["proposal"] == 1
    assert code == 0 and set(report["by_purpose"]) >= {"proposal", "phrasing", "evaluation"}
    assert sum(report["by_purpose"].values()) == pytest.approx(report["cost_today_usd"])
    phrasing = sum(c["cost_usd"] for c in calls if c["purpose"] == "phrasing")
    assert report["by_purpose"]["phrasing"] == pytest.approx(phrasing)
    # AND the evaluation document of the run, and the trail says Best-of-N ran
    (evaluation,) = [d for _, d in rt.store.query(f"orgs/{ORG}/evaluations")]
    assert evaluation["turn_id"] == turn_id and evaluation["n"] == 6 and evaluation["judge"] == "full"
    record = rt.store.get(f"orgs/{ORG}/observability/{turn_id}")
    assert record is not None and record["usage"]["cost_by_purpose"]["evaluation"] > 0
    (responder,) = [e for e in record["trail"] if e["layer"] == "responder"]
    assert "best-of-n N=6" in responder["detail"]
    # AND the text report has a line per purpose
    _, text = charter(rt, capsys, "cost", "--org", ORG)
    assert "purpose evaluation" in text and "purpose phrasing" in text
