"""The scripted model's skill scenarios (``infra/fake_llm/skills.py``): a proposal whose spec is
a valid skill with passing examples, a network skill the sandbox fails, and a call of the
approved skill only when the request offers it."""

from __future__ import annotations

from skill_fakes import CONFIG, ORG

from infra.fake_llm import scripted
from infra.fake_llm.scenario import MessagesRequest
from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.features.skills.state.spec import SkillSpec
from shared_lib.features.skills.store_examples import run_examples
from shared_lib.turn.proposal import Proposal


def proposal(said: str, *offered: str) -> dict:
    tools = [
        {"name": name, "input_schema": {"type": "object"}} for name in (*offered, scripted.PROPOSAL_TOOL)
    ]
    body = {
        "model": "claude-sonnet-4-5",
        "messages": [{"role": "user", "content": said}],
        "tools": tools,
        "tool_choice": {"type": "tool", "name": scripted.PROPOSAL_TOOL},
    }
    [block] = scripted.answer(MessagesRequest(body)).content
    Proposal.model_validate(block["input"])  # what the product accepts
    return block["input"]


def proposed_spec(said: str) -> SkillSpec:
    [call] = proposal(said)["tool_calls"]
    assert call["tool_name"] == "propose_skill"
    return SkillSpec.model_validate({**call["parameters"], "author": "model"})


def test_a_skill_request_proposes_a_valid_skill_whose_examples_pass():
    spec = proposed_spec("受注金額の合計を計算するスキルを作って")
    assert (spec.name, spec.reads, spec.level) == ("order_total", [], 2)
    assert run_examples(spec, MemoryStore(), ORG, CONFIG)["passed"] is True


def test_a_network_skill_request_proposes_code_the_sandbox_fails():
    spec = proposed_spec("為替レートを取ってくるスキルを作って")
    report = run_examples(spec, MemoryStore(), ORG, CONFIG)
    assert (report["passed"], report["error_kinds"]) == (False, ["import"])


def test_the_skill_is_called_with_the_numbers_only_when_it_is_offered():
    said = "受注金額を合計して 1200 と 3400"
    offered = proposal(said, "skill_order_total", "chatwork_task_search")
    assert offered["tool_calls"][0]["tool_name"] == "skill_order_total"
    assert offered["tool_calls"][0]["parameters"] == {"amounts": [1200, 3400]}
    # not offered (not approved, or rolled back): a text answer, no call
    gone = proposal(said, "chatwork_task_search")
    assert (gone["output_type"], gone.get("tool_calls")) == ("text_response", None)
    assert gone["text_response"].endswith("ウル。")


def test_the_phrasing_of_a_proposed_skill_says_a_draft_was_saved():
    said = scripted.integrate('スキルの提案の結果: {"display_name": "受注金額の合計", "draft": true}')
    assert said.startswith("スキルを下書きとして保存したウル！") and "propose_skill" not in said
