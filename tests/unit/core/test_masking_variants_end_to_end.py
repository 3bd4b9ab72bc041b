"""Values typed full-width, dotted, spaced or split by invisible characters (issue 33), served
in process by each arm, leave no value in clear anywhere the product writes: no document of any
collection of the store, no log line, no request the (fake) Anthropic API received, no row the
observer streams to BigQuery. A value counts as in clear in any form a reader could fold back:
its digits, once full-width digits are ASCII and separators and invisible characters are gone.
The person still never reads a placeholder, and no invisible character is stored or shown.

The local stack is not needed for this: the same layers run in process on the in-memory store
and bus (``wire_inprocess``), with the product's own log handler on a captured stderr.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from infra.fake_llm.server import FakeAnthropicServer
from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.collections import of_path
from shared_lib.demo_data import DEMO_ORG, DEMO_ROOM, DEMO_USER, seed_demo_directory
from shared_lib.layers.ingress import accept
from shared_lib.privacy.text_fold import INVISIBLE, fold
from shared_lib.runtime import Runtime
from shared_lib.turn.inbound import InboundMessage
from shared_lib.wiring.composition import build_runtime, wire_inprocess

VALUES = {
    "full-width mobile": "０８０－２７１８－２８１８",
    "full-width at sign": "hanako.sato＠example.com",
    "full-width card": "５５５５　５５５５　５５５５　４４４４",
    "dotted mobile": "070.1618.0339",
    "split mobile": "090\u200b-3141-\u200d5926",
    "landline in brackets": "（０３）３２１４－９８７６",
    "plus eighty-one": "+81 90-8765-4321",
    "my number": "２３４５－６７８９－０１２３",
    "bank account": "７６５４３２１",
}
V = VALUES
YES_IF_LEGACY = "<yes if legacy>"
CONVERSATION = [
    f"覚えておいて：新しい携帯は「{V['full-width mobile']}」、メールは {V['full-width at sign']} です🙏",
    YES_IF_LEGACY,
    f"経理の田中さんに {V['dotted mobile']} へ折り返すタスクを明日までにお願いします",
    YES_IF_LEGACY,
    f"覚えておいて：法人カードは{V['full-width card']}、振込先は普通 {V['bank account']} です",
    YES_IF_LEGACY,
    f"メモ：{V['split mobile']} は\u202e山田さん\u202cの番号、本社は{V['landline in brackets']}",
    f"海外出張中は {V['plus eighty-one']} にかけてね。マイナンバーは{V['my number']}です",
    "私のタスク一覧を見せて",
    f"全員に連絡先は {V['dotted mobile']} とアナウンスして",
    "はい",
]
ANY_PLACEHOLDER = re.compile(r"\[[A-Z][A-Z_]*(?:_\d+)?\]|\[[A-Z_]+_?…")
_events = itertools.count(1)


def digits_of(value: str) -> str:
    return "".join(ch for ch in fold(value).text if ch.isdigit())


# What the product makes up itself and no reader folds back into a value: timestamps (ISO or
# compact sequence keys), hex trace/span ids and hashes, ULIDs, and measurements (a JSON number
# with a fraction: durations, costs, embeddings). Their digits are random, and a seven-digit
# account number turns up in them about once in two thousand runs; text a person typed is never
# kept in one of these shapes, so blanking them hides nothing typed.
MACHINE_MADE = re.compile(
    r"(?:(?<=[\[:,] )|(?<=\[))-?\d+\.\d+(?:e-?\d+)?(?=[,\]}])"
    r"|\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})?"
    r"|\b\d{8}T\d{6,12}\b"
    r"|\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{12,}\b"
    r"|\b(?=[0-9A-Z]*[A-Z])[0-9A-HJKMNP-TV-Z]{26}\b"
)


def readable(text: str) -> str:
    """``text`` folded, with what the product makes up itself blanked, the separators between
    digits gone and letters in lower case."""
    return re.sub(r"(?<=\d)[\s\-.()]+(?=\d)", "", MACHINE_MADE.sub("·", fold(text).text)).lower()


def values_in(texts: dict[str, str]) -> dict[str, set[str]]:
    """Where -> the names of the values found in it in clear, in any folded form."""
    found: dict[str, set[str]] = {}
    for where, text in texts.items():
        seen = readable(text)
        hits = {
            name
            for name, value in VALUES.items()
            if value in text or (digits_of(value) or fold(value).text.lower()) in seen
        }
        if name_hits := hits:
            found[where] = name_hits
    return found


def as_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


@dataclass
class Served:
    arm: str
    store: MemoryStore
    replies: list[str]
    log_lines: list[str]
    llm_requests: list[Any]
    bigquery_rows: list[dict[str, Any]]


def say(rt: Runtime, text: str) -> None:
    n = next(_events)
    accept(
        rt,
        InboundMessage(
            channel="http",
            org_id=DEMO_ORG,
            room_id=DEMO_ROOM,
            user_id=DEMO_USER,
            text=text,
            message_id=f"v-{n}",
            event_id=f"v-{n}",
            received_at=datetime.now(UTC),
        ),
    )


@pytest.fixture(scope="module", params=["llm", "legacy"])
def served(request: pytest.FixtureRequest) -> Iterator[Served]:
    arm, store, stderr = request.param, MemoryStore(), io.StringIO()
    with FakeAnthropicServer() as llm_server, contextlib.redirect_stderr(stderr):
        env = {
            "CHARTER_ENV": "test",
            "CHARTER_CHANNELS": "recording",
            "CHARTER_FLAGS_TTL": "0",
            "CHARTER_LOG_JSON": "true",  # the product's own handler, every line from INFO up
            "ANTHROPIC_BASE_URL": llm_server.url,
            "ANTHROPIC_API_KEY": "scripted-model",
        }
        if arm == "legacy":
            env["CHARTER_LLM"] = "none"
        rt = build_runtime(env, store=store)
        wire_inprocess(rt)
        seed_demo_directory(store)
        for text in CONVERSATION:
            if text == YES_IF_LEGACY:
                if arm == "legacy":
                    say(rt, "はい")
                continue
            say(rt, text)
        requests = [r["body"] for r in llm_server.requests]
    rows = [json.loads(data) for topic, data, _, _ in rt.bus.published if topic == "events"]  # type: ignore[attr-defined]
    replies = [r.text for r in rt.channels["http"].sent]  # type: ignore[attr-defined]
    yield Served(arm, store, replies, stderr.getvalue().splitlines(), requests, rows)


def test_the_conversation_reached_every_place_the_scan_covers(served: Served) -> None:
    # A scan of places the conversation never wrote to would prove nothing.
    written = {entry.name for path in served.store.dump() if (entry := of_path(path)) is not None}
    assert {"conversations", "messages", "memories", "tasks", "observability", "sessions"} <= written
    assert len(served.log_lines) > 20 and all(json.loads(line) for line in served.log_lines)
    assert [r for r in served.bigquery_rows if r.get("kind") == "turn_record"]
    if served.arm == "llm":
        assert "llm_calls" in written and served.llm_requests


def test_no_document_of_any_collection_holds_a_value_in_clear(served: Served) -> None:
    assert values_in({p: as_text(d) for p, d in served.store.dump().items()}) == {}


def test_no_log_line_holds_a_value_in_clear(served: Served) -> None:
    assert values_in({f"line {i}": line for i, line in enumerate(served.log_lines)}) == {}


def test_the_cloud_llm_never_received_a_value_in_clear(served: Served) -> None:
    assert values_in({f"request {i}": as_text(b) for i, b in enumerate(served.llm_requests)}) == {}


def test_no_bigquery_row_holds_a_value_in_clear(served: Served) -> None:
    assert values_in({f"row {i}": as_text(r) for i, r in enumerate(served.bigquery_rows)}) == {}


def test_the_person_never_reads_a_placeholder_nor_an_invisible_character(served: Served) -> None:
    assert served.replies and not [r for r in served.replies if ANY_PLACEHOLDER.search(r)]
    shown_or_kept = [*served.replies, *(as_text(d) for d in served.store.dump().values())]
    assert not [t for t in shown_or_kept if {ord(c) for c in t} & (INVISIBLE - {0x200D})]


def test_the_scan_finds_a_value_in_any_form() -> None:
    # GIVEN a full-width number kept as typed, one without separators, one masked
    texts = {
        "typed": "携帯 ０８０－２７１８－２８１８",
        "bare": "card 5555555555554444",
        "split": "mail HANAKO.SATO@EXAMPLE.COM",
        "masked": "携帯 [PHONE] と [CARD]",
        # and identifiers the product made up whose random digits hold an account number
        "made up": "at 2026-11-28 10:49:27.654321+00:00, trace 6d7892b7654321aa94d3c7cbd3683da2, "
        "seq 20261128T102707654321, turn 01M8G7654321AJS00KEEY99XYZ",
        "measured": '{"llm_duration_ms": 1753.7654321, "embedding": [0.07654321, -0.1]}',
        "account in an id's company": "trace 6d7892b7654321aa94d3c7cbd3683da2 振込先 7654321",
        "account as a string": '{"note": "0.7654321", "at": "2026-11-28"}',
    }
    # THEN the scan reports exactly the values in clear, and nothing in the made-up identifiers
    assert values_in(texts) == {
        "typed": {"full-width mobile"},
        "bare": {"full-width card"},
        "split": {"full-width at sign"},
        "account in an id's company": {"bank account"},
        "account as a string": {"bank account"},
    }
