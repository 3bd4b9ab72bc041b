"""Real turns through the in-process pipeline (composition.wire_inprocess, the scripted model)
are staged by the background memory layer, reviewed and exported (seed 001 §29)."""

from __future__ import annotations

import json
from pathlib import Path

from ops_fakes import ORG, TASK_CREATE, TASK_DONE, USER, send

from shared_lib.features.finetune.state import review, staging
from shared_lib.features.finetune.state.config import load_config
from shared_lib.features.finetune.state.export import export
from shared_lib.features.finetune.state.formats import parse_line
from shared_lib.features.finetune.state.staging import candidate_path
from shared_lib.turn.proposal import Proposal


def test_real_turns_are_staged_reviewed_and_exported(rt, tmp_path: Path, monkeypatch):  # type: ignore[no-untyped-def]
    # turn ids are random: no split here, so the count is exact (the split's own tests hold it)
    no_split = load_config().model_copy(update={"held_out_percent": 0})
    monkeypatch.setattr(staging, "load_config", lambda: no_split)
    # GIVEN the demo organisation (opted in) and three turns: a task executed at confidence 0.9,
    # a chat reply, and a task completion the model proposes at 0.75
    created = send(rt, TASK_CREATE)
    chat = send(rt, "今日は暑いね〜", user="u-tanaka", room="room-tanaka")
    low = send(rt, TASK_DONE, user="u-sato1", room="room-sato")
    # THEN the first two are pending candidates with their source, the third is not staged
    first = rt.store.get(candidate_path(ORG, created))
    assert first is not None and first["status"] == "pending" and first["kind"] == "good"
    assert first["source"]["tool"] == "chatwork_task_create" and first["source"]["user_id"] == USER
    assert first["target"]["proposal"]["output_type"] == "tool_call"
    assert rt.store.get(candidate_path(ORG, chat)) is not None
    assert rt.store.get(candidate_path(ORG, low)) is None
    # WHEN the person corrects the assistant right after the task
    send(rt, "違う、そうじゃなくて佐藤さんにお願い")
    corrected = rt.store.get(candidate_path(ORG, created))
    assert corrected is not None and corrected["kind"] == "corrected" and corrected["correction"]["text"]
    # AND the CEO accepts the chat, edits the corrected one's target, and it is exported
    review.accept(rt.store, ORG, chat, now=rt.clock(), by="u-kazu")
    fixed = {**first["target"]["proposal"], "confidence": {"overall": 0.95}}
    review.edit(rt.store, ORG, created, proposal=fixed, now=rt.clock(), by="u-kazu")
    out = tmp_path / "demo.jsonl"
    result = export(rt.store, ORG, fmt="openai", out=out, now=rt.clock(), cipher=rt.cipher(ORG))
    # THEN both lines are the provider's format whose assistant content is a proposal of the schema
    assert result.ok and result.card["count"] == 2
    assert result.card["counts"]["kind"] == {"corrected": 1, "good": 1}
    for line in out.read_text(encoding="utf-8").splitlines():
        Proposal.model_validate_json(parse_line("openai", line).messages[-1].content)
    assert json.loads(out.with_name("demo.card.json").read_text())["masking_check"]["passed"] is True


def test_a_confirmed_action_is_staged_with_the_request_it_answers(rt, monkeypatch):  # type: ignore[no-untyped-def]
    no_split = load_config().model_copy(update={"held_out_percent": 0})
    monkeypatch.setattr(staging, "load_config", lambda: no_split)
    # GIVEN the CEO asks for an announcement to everyone, which the guardian holds for a 「はい」
    asked = send(rt, "全員に明日は棚卸しで休業とお知らせして", user="u-kazu", room="room-kazu")
    assert rt.store.get(candidate_path(ORG, asked)) is None  # a confirmation question is not staged
    # WHEN the CEO confirms twice (a send to everyone asks twice) and the announcement is executed
    send(rt, "はい", user="u-kazu", room="room-kazu")
    yes = send(rt, "はい", user="u-kazu", room="room-kazu")
    # THEN the confirmed turn is a good candidate whose input is the request, not the 「はい」
    staged = rt.store.get(candidate_path(ORG, yes))
    assert staged is not None and staged["kind"] == "good", staged
    assert "棚卸し" in staged["input"]["user"] and staged["target"]["proposal"]["tool_calls"]
