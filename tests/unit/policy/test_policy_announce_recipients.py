"""An announcement is confirmed by how many it reaches (seed 000 §5.3.3b priority 6), not because
it is an announcement: the seed's DANGEROUS_OPERATIONS has no announce, so one or two named
recipients run as asked, three or more are confirmed, everyone twice.

GIVEN the built-in tools and the packaged policy, WHEN the guardian judges an announcement,
THEN the action and the reason code are these.
"""

from __future__ import annotations

import pytest

from shared_lib.policy.guardian import evaluate
from shared_lib.wiring.features import tool_registry
from tests.unit.policy.policy_fakes import NOW, tool_call

REGISTRY = tool_registry()
MESSAGE = "明日の定例は15時〜に変更です🙏 資料は共有フォルダにあります"


@pytest.mark.parametrize(
    ("recipients", "action", "code"),
    [
        (["田中さん"], "allow", "pass"),
        (["山田部長"], "allow", "pass"),
        (["田中さん", "ﾔﾏﾀﾞさん"], "allow", "pass"),
        (["田中さん", "山田さん", "佐藤課長"], "confirm", "params.recipients_many"),
        ([f"社員{i}" for i in range(10)], "confirm", "params.recipients_many_10"),
        ("all", "confirm", "params.recipients_all"),
        ("全員", "confirm", "params.recipients_all"),
    ],
)
def test_given_an_announcement_when_judged_then_only_three_or_more_recipients_are_confirmed(
    recipients, action, code
):
    verdict = evaluate(
        tool_call("announce", {"message": MESSAGE, "recipients": recipients}), registry=REGISTRY, now=NOW
    )
    assert (
        verdict.action.value if hasattr(verdict.action, "value") else verdict.action,
        verdict.reason_code,
    ) == (
        action,
        code,
    )


def test_given_everyone_when_judged_then_it_is_a_double_confirmation():
    verdict = evaluate(
        tool_call("announce", {"message": MESSAGE, "recipients": "all"}), registry=REGISTRY, now=NOW
    )
    assert verdict.double_confirmation
