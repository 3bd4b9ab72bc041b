"""view_salary_info (seed 000 §6.4.4, level 6): one person's amounts from the salary record."""

from __future__ import annotations

from tool_fakes import ORG, call

from shared_lib import collections
from shared_lib.brain.integration import done_text
from shared_lib.persona.catalogue import load_persona
from shared_lib.turn.envelope import ToolResult
from shared_lib.wiring.features import tool_registry


def salary(store, user_id, **amounts):
    record = {"user_id": user_id, "monthly_base": 320000, "allowances": 25000, "annual_total": 4800000}
    store.set(collections.path("salaries", org=ORG, id=user_id), {**record, **amounts})


def test_the_registry_has_view_salary_info_at_the_seeds_level():
    spec = tool_registry().get("view_salary_info")
    assert spec is not None and spec.min_level == 6 and spec.effect_kind == "read"


def test_given_a_salary_record_when_viewed_by_name_then_the_amounts_and_nothing_else(ex, store):
    salary(store, "u-tanaka2", note="内部メモ")
    out = call(ex, "view_salary_info", {"target_user_name": "田中花子さん"}, user="u-boss")
    assert out.ok and out.result["user"] == "田中花子" and out.result["monthly_base"] == 320000
    assert "note" not in out.result and "user_id" not in out.result
    text = done_text(
        load_persona(), ToolResult(tool_name="view_salary_info", call_index=0, ok=True, result=out.result)
    )
    assert text.startswith("田中花子さんの給与情報ウル🐺") and "月額基本給: 320,000円" in text


def test_given_self_words_when_viewed_then_the_senders_own_record(ex, store):
    salary(store, "u-boss", monthly_base=900000)
    out = call(ex, "view_salary_info", {"target_user_name": "自分"}, user="u-boss")
    assert out.ok and (out.result["user"], out.result["monthly_base"]) == ("カズ", 900000)


def test_given_no_record_or_two_people_when_viewed_then_an_input_error_never_a_guess(ex, store):
    missing = call(ex, "view_salary_info", {"target_user_name": "山田次郎"}, user="u-boss")
    assert missing.error_code == "validation_error" and "登録されていません" in missing.result["detail"]
    two = call(ex, "view_salary_info", {"target_user_name": "田中"}, user="u-boss", call_id="c2")
    assert two.result["clarification"] and two.result["options"] == ["田中太郎", "田中花子"]
