"""The router on a channel fixed to CHAT (seed 002 §2.6, seed 003 最終更新: ``line_forced_chat``):
whatever a LINE message says, its route starts in CHAT; ``/local`` and ``/cloud`` still hold;
the same text elsewhere is routed as before."""

from __future__ import annotations

import pytest

from shared_lib.routing import Route, decide

# texts the rule dictionary or a command sends elsewhere, as people write them
ELSEWHERE = [
    "diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-print('hi')\n+print('hello')",
    "/code ログイン画面のバリデーション直して",
    "／ＰＬＡＮ 来月の採用イベントの段取り組んで",
    "/research https://example.com/news の最新情報を比較してまとめて",
]


def never_called(text: str) -> str:
    raise AssertionError("the classifier must not be asked for a LINE message")


@pytest.mark.parametrize("text", ELSEWHERE)
def test_a_line_message_starts_in_chat_whatever_it_says(text):
    # WHEN a LINE message arrives THEN its route is CHAT, fixed by the channel
    d = decide(text, channel="line", classify=never_called)
    assert (d.primary_route, d.source, d.flags.forced) == (Route.CHAT, "channel", "line_forced_chat")
    assert "line_forced_chat" in d.reason
    # AND the same text on Slack is routed away from CHAT as before
    assert decide(text, channel="slack").primary_route is not Route.CHAT


def test_a_message_the_rules_cannot_place_is_chat_on_line_without_a_classifier_call():
    d = decide("ねえ、さっきの件どうなったっけ？？", channel="line", classify=never_called)
    assert d.primary_route is Route.CHAT and d.flags.classifier_called is False


def test_local_and_cloud_still_hold_on_line():
    d = decide("/local 議事録の要点まとめて", channel="line")
    assert d.flags.local_only is True and d.primary_route is Route.CHAT
    d = decide("/cloud ありがとう、もう大丈夫", local_only=True, channel="line")
    assert d.flags.local_only is False
    # an input of only a command is the command's answer, as on every channel
    d = decide("/local", channel="line")
    assert d.source == "command" and d.flags.local_only is True and d.flags.forced is None
