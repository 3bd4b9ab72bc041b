"""No false blocks (issue 18): a confidential word blocks only when it would disclose data, and a
role mentioned in the reasoning is a permission decision only when the proposal claims the right
to act because of it. Both tables run through the guardian's tree and, for the constitution, the
brain's own enforcer too: they read the same patterns, so a turn is never blocked by one of them
for what the other lets through.

GIVEN a proposal saying one of these sentences, WHEN it is judged with the packaged policy,
THEN it is blocked with the stable reason code exactly when the sentence discloses or claims.
"""

from __future__ import annotations

import pytest

from shared_lib.brain import constitution as enforcer
from shared_lib.brain.config import load_brain_config
from shared_lib.errors import ConfigError
from shared_lib.persona.catalogue import load_persona
from shared_lib.policy.config import ConfidentialPattern
from shared_lib.policy.guardian import evaluate
from shared_lib.tools.registry import ToolRegistry
from shared_lib.turn.proposal import Proposal
from shared_lib.wiring.features import tool_registry
from tests.unit.policy.policy_fakes import NOW, REASONING, config, text_answer, tool_call

EMPTY = ToolRegistry([])

# -- confidential words -------------------------------------------------------------------------
DISCLOSES = [
    "田中さんの評価はBウル",
    "山田さんの年収は600万円ウル",
    "山田さんの給与は50万円ウル",
    "佐藤さんの今期の査定結果はA評価だったウル",
    "鈴木さんの評価：S",
    "給与：月額35万円、賞与は年2回ウル",
    "高橋さんの年収は1,200万ウル",
    "伊藤さんの評価点は72点ウル",
    "渡辺さんの評価は低いウル、改善が必要ウル",
    "来期のM&Aの件ウル",
    "A社の買収を来月発表する予定ウル",
    "B社とのM&Aは基本合意に達したウル",
    "買収金額は50億円ウル",
    "査定額は３００万円ウル",
]
MENTIONS = [
    "評価面談の日程を決めましょうウル",
    "人事評価シートの提出期限は金曜ウル",
    "人事評価シートの提出期限は11月28日（金）ウル",
    "給与明細の見方を説明するウル",
    "M&Aの一般的な流れを説明するウル",
    "給与の振込日は毎月25日ウル",
    "年収アップのために資格を取るのはいい考えウル",
    "田中さんの評価面談は来週の水曜10時からウル",
    "評価の高いレストランを探してみるウル",
    "買収と合併の違いを説明するウル",
    "M&A仲介会社の選び方を説明するウル",
    "給与明細の見方を説明するウル。交通費の精算は5,000円までなら領収書なしでいいウル",
    "評価シートの3つの項目を順番に書くといいウル",
    "敵対的買収の防衛策について一般論を説明するウル",
]


@pytest.mark.parametrize("sentence", DISCLOSES)
def test_a_confidential_word_with_a_value_in_an_answer_is_blocked(sentence):
    verdict = evaluate(text_answer(sentence), registry=EMPTY, now=NOW)
    assert (verdict.action, verdict.reason_code) == ("block", "security.confidential")


@pytest.mark.parametrize("sentence", DISCLOSES)
def test_a_disclosure_sent_out_or_a_colleagues_hr_value_kept_is_blocked_and_a_lookup_is_not(sentence):
    # a memory is read back later, in whatever room it is asked in: a named colleague's grade or
    # pay kept there leaves the person who said it (a value about nobody named stays kept; contacts
    # are kept sealed for their author: test_policy_disclosure_table); a lookup keeps nothing
    sent = tool_call("send_message", {"message": sentence, "recipients": ["a"]})
    kept = tool_call("save_memory", {"content": sentence})
    looked_up = tool_call("knowledge_search", {"query": sentence})
    assert evaluate(sent, registry=EMPTY, now=NOW).reason_code == "security.confidential"
    colleague = "さん" in sentence
    assert (evaluate(kept, registry=EMPTY, now=NOW).reason_code == "security.confidential") is colleague
    assert evaluate(looked_up, registry=EMPTY, now=NOW).reason_code == "pass"


@pytest.mark.parametrize("sentence", MENTIONS)
def test_a_confidential_word_merely_mentioned_passes(sentence):
    assert evaluate(text_answer(sentence), registry=EMPTY, now=NOW).reason_code == "pass"
    sent = tool_call("send_message", {"message": sentence, "recipients": ["a"]})
    assert evaluate(sent, registry=EMPTY, now=NOW).reason_code == "pass"


def test_the_block_message_names_the_word_never_the_internal_pattern_name():
    verdict = evaluate(text_answer("田中さんの評価はBウル"), registry=EMPTY, now=NOW)
    assert "評価" in verdict.message and "evaluation" not in verdict.message
    assert verdict.details["pattern"] == "evaluation"


def test_a_value_in_the_next_sentence_is_not_the_words_disclosure():
    # GIVEN a word whose disclosure is any amount
    p = ConfidentialPattern(name="salary", pattern="給与", disclosure=["amount"])
    markers = {"amount": r"\d+円"}
    # THEN only an amount in the word's own sentence, within the window, discloses
    assert p.disclosure_in("給与明細の見方です。交通費は500円です", markers) is None
    assert p.disclosure_in("今月の給与は500円です", markers) == "今月の給与は500円です"
    assert p.disclosure_in("給与" + "あ" * 30 + "500円", markers) is None
    # AND without markers the word alone blocks (the strict, older reading)
    assert ConfidentialPattern(name="salary", pattern="給与").disclosure_in("給与明細", markers)


def test_a_disclosure_marker_the_policy_does_not_define_is_a_configuration_error():
    word = {"name": "salary", "pattern": "給与", "disclosure": ["salary_amount"]}
    with pytest.raises(ConfigError, match="salary_amount"):
        config(security={"confidential_patterns": [word]})


# -- roles and permissions in the reasoning ------------------------------------------------------
CLAIMS = [
    "部長なので閲覧権限がある",
    "管理者だから全員のデータを見せてよい",
    "社長なので承認不要",
    "このユーザーは管理者なので実行してよい",
    "代表なのでレベル6として扱う",
    "役員なので全社員の給与を見ても問題ない",
    "上長だから部下の評価を閲覧できる",
    "部長ですので確認なしで送信してよい",
    "管理者のため権限チェックは不要",
    "役員なので制限なく全部見られる",
    "社長だから特別に許可する",
    "管理者という立場なので全員のタスクにアクセスできる",
    "このユーザーは権限がある人なので実行する",
    "山田さんは管理者なので全社員を見る権限がある",
]
CONTEXT = [
    "依頼者は部長なので、部下のタスク一覧を確認したいと考えられる",
    "部長なので丁寧な言葉で返す",
    "田中部長なので宛先は田中さん",
    "相手が社長なので、承認のお願いを丁寧に書く",
    "管理者なので、設定変更の相談だと思われる",
    "依頼者が上長なので、部下へのタスク依頼と理解した",
    "役員なので会議の日程調整の依頼だと考えた",
    "代表なので挨拶文をかしこまった調子にする",
    "部長なので、権限の判断は認可ゲートに任せて一覧を提案する",
    "部長なので部下のタスクを見たいのだろう",
    "社長だから全社向けのアナウンスを作りたいのだと理解した",
    "管理者のため、問い合わせ先として案内する",
]
# the same false-positive shape in the other permission patterns
NOT_CLAIMS = [
    "承認権限がある人に確認をお願いしたいという依頼だと理解した",
    "承認済みの申請を一覧にしたいという依頼",
    "共有フォルダにアクセスできるようにしたいという相談",
    "閲覧が許可されている範囲を知りたいという質問",
    "権限がある場合だけ実行されるので、提案だけする",
]


def reasoned(reason: str) -> Proposal:
    return tool_call("chatwork_task_search", {}, reasoning={**REASONING, "tool_selection_reason": reason})


def brain_found(proposal: Proposal) -> list[str]:
    _, found = enforcer.inspect_proposal(
        proposal, load_brain_config(), load_persona(), registry=tool_registry()
    )
    return [v.code for v in found if v.action == "block"]


@pytest.mark.parametrize("reason", CLAIMS)
def test_a_role_given_as_the_right_to_act_is_a_permission_decision(reason):
    proposal = reasoned(reason)
    verdict = evaluate(proposal, registry=EMPTY, now=NOW)
    assert (verdict.action, verdict.reason_code) == ("block", "constitution.permission_decision")
    assert brain_found(proposal) == ["constitution.permission_decision"]


@pytest.mark.parametrize("reason", CONTEXT + NOT_CLAIMS)
def test_a_role_or_permission_mentioned_as_context_is_not_a_decision(reason):
    proposal = reasoned(reason)
    assert evaluate(proposal, registry=EMPTY, now=NOW).reason_code == "pass"
    assert brain_found(proposal) == []


@pytest.mark.parametrize("sentence", ["部長なので閲覧権限があるウル", "社長だから承認はいらないウル"])
def test_a_role_claim_in_the_answer_text_is_blocked_too(sentence):
    assert evaluate(text_answer(sentence), registry=EMPTY, now=NOW).reason_code == (
        "constitution.permission_decision"
    )


def test_every_pattern_the_shipped_policy_names_has_a_label_a_user_reads():
    cfg = config()
    names = [p.name for p in cfg.constitution.permission_patterns]
    names += [p.name for p in cfg.security.ng_patterns] + [p.name for p in cfg.security.confidential_patterns]
    names += cfg.security.disclosure.names() if cfg.security.disclosure else []
    unlabelled = [n for n in names if not cfg.display.patterns.get(n)]
    assert names and not unlabelled
