"""Fixtures of the episode and tag tests: an organisation's day of conversation in a
``MemoryStore``, a fixed clock, the scripted LLM of the brain tests, story answers."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from typing import Any

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.context.history import append_message
from shared_lib.dates.model import JST
from shared_lib.memory.tags import ScoredTag, TaggingConfig, assign, untagged_fields
from shared_lib.ports import LLMRequest, LLMResponse
from tests.unit.brain.brain_fakes import FakeLLM, text_answer

ORG = "acme"
DAY = date(2026, 11, 24)
NOW = datetime(2026, 11, 25, 0, 30, tzinfo=JST).astimezone(UTC)  # the job runs after midnight JST
RETENTION = timedelta(days=90)
MODEL = "summary-model"
ONE_DAY = timedelta(days=1)
PEOPLE = {"u-suzuki": "鈴木", "u-tanaka": "田中"}


def at(hour: int, minute: int = 0, day: date = DAY) -> datetime:
    return datetime(day.year, day.month, day.day, hour, minute, tzinfo=JST).astimezone(UTC)


def seeded_store() -> MemoryStore:
    store = MemoryStore()
    for user_id, name in PEOPLE.items():
        store.set(f"orgs/{ORG}/users/{user_id}", {"name": name, "level": 2})
    return store


def say(
    store: MemoryStore, user: str, text: str, when: datetime, reply: str = "了解したウル🐺", org: str = ORG
) -> None:
    """One message of ``user`` in their room and the assistant's reply a minute later."""
    key = f"{org}:http:room-{user}:{user}"
    mid = f"{when.strftime('%H%M%S%f')}"
    append_message(store, org, key, f"{mid}-in", role="user", text=text, at=when, user_id=user)
    append_message(
        store,
        org,
        key,
        f"{mid}-out",
        role="assistant",
        text=reply,
        at=when + timedelta(minutes=1),
        user_id=user,
    )


def busy_day(store: MemoryStore, day: date = DAY) -> None:
    """Four messages on ``day``, one the evening before and one the morning after (not of it)."""
    say(store, "u-suzuki", "見積書の確認をお願いしたい", at(9, day=day))
    say(store, "u-tanaka", "見積書は午後に送ります、電話は 090-1234-5678 まで", at(11, day=day))
    say(store, "u-suzuki", "請求書の締めは月末です", at(15, day=day))
    say(store, "u-tanaka", "ありがとう、見積書を送付しました", at(18, day=day))
    say(store, "u-suzuki", "前日の話: 社員旅行", at(23, day=day - timedelta(days=1)))
    say(store, "u-suzuki", "翌日の話: 年末調整", at(8, day=day + timedelta(days=1)))


def story(
    text: str = "今日は鈴木さんと田中さんと見積書の話をしたウル。みんながんばったウル🐺", **metadata: Any
) -> LLMResponse:
    body = {
        "story_text": text,
        "metadata": {
            "mood": ["達成感"],
            "topics": ["見積書"],
            "characters": ["鈴木", "田中"],
            "importance": 0.6,
            "tags": ["見積書"],
            **metadata,
        },
    }
    return text_answer(json.dumps(body, ensure_ascii=False))


def scripted(*answers: Any, default: Any = None) -> FakeLLM:
    """The brain tests' scripted LLM: ``answers`` in order, then ``default`` (else a call fails)."""
    return FakeLLM(*answers, default=default)


def user_text(request: LLMRequest) -> str:
    return str(request.messages[0]["content"])


def system_text(request: LLMRequest) -> str:
    return "".join(str(b.get("text", "")) for b in request.system)


def chunk(
    store: Any, cid: str, text: str, org: str = ORG, created: datetime | None = None, **extra: Any
) -> str:
    """A chunk as SEARCH writes it (``orgs/{org}/memory_chunks/{id}``), never tagged."""
    path = f"orgs/{org}/memory_chunks/{cid}"
    store.set(
        path,
        {
            "source_kind": "knowledge",
            "source_id": cid,
            "seq": 0,
            "text": text,
            "created_at": created or NOW - 30 * ONE_DAY,
            **untagged_fields(),
            **extra,
        },
    )
    return path


def put(
    store: Any, item: str, *tags: tuple[str, float], when: datetime = NOW, by: Any = "background_job"
) -> Any:
    scored = [ScoredTag(tag=t, confidence=c) for t, c in tags]
    return assign(store, ORG, item, scored, now=when, tagged_by=by, config=TaggingConfig())


__all__ = ["FakeLLM", "text_answer"]
