"""Issue 36, served in process by each arm: what a person asks the assistant to keep (a memory, a
task body) is stored sealed — no value in clear in any collection, no placeholder in a kept
document without its sealed value — and read back in clear by the people allowed to read it
(the memory's author; the task's creator and assignee), as words by anyone else, never as a
placeholder.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from infra.fake_llm.server import FakeAnthropicServer
from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.collections import of_path
from shared_lib.demo_data import DEMO_ORG, DEMO_ROOM, seed_demo_directory
from shared_lib.layers.ingress import accept
from shared_lib.privacy.sealing import SEALED_FIELD, destroyed
from shared_lib.privacy.text_fold import fold
from shared_lib.runtime import Runtime
from shared_lib.turn.inbound import InboundMessage
from shared_lib.wiring.composition import build_runtime, wire_inprocess

AUTHOR, ASSIGNEE, MANAGER, COLLEAGUE = "u-suzuki", "u-tanaka", "u-kazu", "u-yamada"
MOBILE, MAIL, TASK_MAIL = "０９０－１２３４－５６７８", "tanaka@example.co.jp", "hanako.sato@example.com"
YES_IF_LEGACY = "<yes if legacy>"
CONVERSATION = [
    (AUTHOR, f"覚えておいて：田中さんの携帯は{MOBILE}、メールは {MAIL} だよ"),
    (AUTHOR, YES_IF_LEGACY),
    (AUTHOR, "田中さんの連絡先なんだっけ？"),
    (COLLEAGUE, "田中さんの連絡先なんだっけ？"),
    (AUTHOR, f"田中さんに明日までに {TASK_MAIL} へ見積書を送るタスクをお願い🙏"),
    (AUTHOR, YES_IF_LEGACY),
    (ASSIGNEE, "私のタスク一覧を見せて"),
    (MANAGER, "田中さんのタスク一覧を見せて"),
]
# Records and logs: masked by design (seed 002 §7), never read back to a person, so a placeholder
# there has no sealed value behind it. Every other collection that holds one fails the scan.
LOGS = {
    "observability": "the turn record",
    "llm_calls": "what the cloud LLM was sent",
    "receipts": "a tool call's request and result",
    "approval_jobs": "what was asked to be confirmed",
    "agent_states": "the conversation's working state",
    "ft_candidates": "fine-tuning data, masked like the brain saw it",
}
KEPT = {"memories", "memory_chunks", "tasks", "messages"}  # the history keeps what was said too
ANY_PLACEHOLDER = re.compile(r"\[[A-Z][A-Z_]*(?:_\d+)?\]")
_events = itertools.count(1)


def readable(text: str) -> str:
    """``text`` folded, separators between digits gone, lower case: a value in any form it was typed."""
    return re.sub(r"(?<=\d)[\s\-.()]+(?=\d)", "", fold(text).text).lower()


def clear_values_in(text: str) -> set[str]:
    seen = readable(text)
    return {v for v in (MOBILE, MAIL, TASK_MAIL) if readable(v) in seen}


@dataclass
class Served:
    arm: str
    store: MemoryStore
    replies: dict[int, str]  # the reply to each line of CONVERSATION


def say(rt: Runtime, user: str, text: str) -> None:
    n = next(_events)
    accept(
        rt,
        InboundMessage(
            channel="http",
            org_id=DEMO_ORG,
            room_id=DEMO_ROOM,
            user_id=user,
            text=text,
            message_id=f"s-{n}",
            event_id=f"s-{n}",
            received_at=datetime.now(UTC),
        ),
    )


@pytest.fixture(scope="module", params=["llm", "legacy"])
def served(request: pytest.FixtureRequest) -> Iterator[Served]:
    arm, store = request.param, MemoryStore()
    replies: dict[int, str] = {}
    with FakeAnthropicServer() as llm_server:
        env = {
            "CHARTER_ENV": "test",
            "CHARTER_CHANNELS": "recording",
            "CHARTER_FLAGS_TTL": "0",
            "ANTHROPIC_BASE_URL": llm_server.url,
            "ANTHROPIC_API_KEY": "scripted-model",
        }
        if arm == "legacy":
            env["CHARTER_LLM"] = "none"
        rt = build_runtime(env, store=store)
        wire_inprocess(rt)
        seed_demo_directory(store)
        sent = rt.channels["http"].sent  # type: ignore[attr-defined]
        for i, (user, text) in enumerate(CONVERSATION):
            if text == YES_IF_LEGACY:
                if arm == "legacy":
                    say(rt, user, "はい")
                continue
            before = len(sent)
            say(rt, user, text)
            replies[i] = "\n".join(r.text for r in sent[before:])
    yield Served(arm, store, replies)


def test_the_author_reads_back_the_number_and_the_address_in_clear(served: Served) -> None:
    reply = served.replies[2]
    assert readable(MOBILE) in readable(reply) and MAIL in reply


def test_someone_else_asking_gets_neither_value(served: Served) -> None:
    reply = served.replies[3]
    assert reply and clear_values_in(reply) == set()


def test_the_task_body_is_clear_for_its_creator_and_assignee_and_words_for_a_manager(served: Served) -> None:
    assert TASK_MAIL in served.replies[4]  # its creator, told what was created
    assert TASK_MAIL in served.replies[6]  # its assignee, listing their own tasks
    manager = served.replies[7]
    assert "見積書" in manager and TASK_MAIL not in manager and "（メールアドレス・非表示）" in manager


def test_nobody_ever_reads_a_placeholder(served: Served) -> None:
    assert not [r for r in served.replies.values() if ANY_PLACEHOLDER.search(r)]


def test_no_collection_holds_a_value_in_clear(served: Served) -> None:
    found = {
        path: hits
        for path, doc in served.store.dump().items()
        if (
            hits := clear_values_in(
                json.dumps(
                    {k: v for k, v in doc.items() if k != SEALED_FIELD}, ensure_ascii=False, default=str
                )
            )
        )
    }
    assert found == {}


def test_no_kept_document_lost_a_value_and_only_logs_hold_bare_placeholders(served: Served) -> None:
    # GIVEN every document of every collection the conversation wrote
    dump = served.store.dump()
    kept = {p: d for p, d in dump.items() if (e := of_path(p)) is not None and e.name in KEPT}
    # THEN the kept ones are there, sealed (the memory, its chunk, the task, the history) …
    assert {of_path(p).name for p in kept} == KEPT  # type: ignore[union-attr]
    assert all(
        d.get(SEALED_FIELD)
        for d in kept.values()
        if ANY_PLACEHOLDER.search(json.dumps(d, ensure_ascii=False, default=str))
    )
    # … and a placeholder with no sealed value behind it is only ever in a record or a log
    lost = {(e.name if (e := of_path(p)) is not None else p) for p, d in dump.items() if destroyed(d)}
    assert lost - set(LOGS) == set()


def test_an_event_episode_of_the_memory_is_sealed_too(served: Served) -> None:
    episodes = {p: d for p, d in served.store.dump().items() if "/episodes/" in p}
    if served.arm == "legacy":
        assert episodes == {}  # no LLM: no story is told
        return
    assert episodes and all(d.get(SEALED_FIELD) and destroyed(d) == [] for d in episodes.values())
