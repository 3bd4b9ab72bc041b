"""Sealing (issue 36): a kept document holds the masked text and its values encrypted under the
vault key, opened only for a reader the handler allows; never the value in clear, never a
placeholder with the value thrown away."""

from __future__ import annotations

import json

from cryptography.fernet import Fernet, MultiFernet

from shared_lib.privacy.sanitizer import Sanitizer
from shared_lib.privacy.sealing import (
    SEALED_FIELD,
    destroyed,
    masked_values,
    revealed,
    seal,
    seal_excerpt,
    unseal,
)
from shared_lib.tools.handlers.tasks import reads_in_clear
from shared_lib.tools.task_backend import Task

KEY = MultiFernet([Fernet(Fernet.generate_key())])
NOTE = "田中さんの携帯は０９０－１２３４－５６７８、メールは tanaka@example.co.jp だよ📱 自宅は03-3214-9876"


def test_a_sealed_memory_keeps_the_masked_text_and_opens_to_the_values_as_typed() -> None:
    # GIVEN a memory with a full-width mobile, an address and a landline
    doc = {"content": NOTE, "category": "person", "user_id": "u-suzuki"}
    # WHEN it is sealed
    stored = seal(doc, KEY)
    # THEN the text is what the masked store always held, no value is in clear, none is lost
    assert stored["content"] == Sanitizer.default().mask_stored(NOTE)
    text = json.dumps(stored, ensure_ascii=False)
    assert "０９０" not in text and "090" not in text and "tanaka@" not in text and "3214" not in text
    assert len(stored[SEALED_FIELD]["content"]) == 3 and destroyed(stored) == []
    assert stored["user_id"] == "u-suzuki"  # an identifier is never masked
    # AND opened with the key it is the memory as the person said it, with the values it gave back
    opened, values = unseal(stored, KEY)
    assert opened == doc
    assert values == ["０９０－１２３４－５６７８", "tanaka@example.co.jp", "03-3214-9876"]


def test_without_the_key_nothing_opens_and_the_placeholders_stay() -> None:
    # GIVEN a memory sealed under one key
    stored = seal({"content": NOTE}, KEY)
    # WHEN it is read without a key, or under another one
    other = MultiFernet([Fernet(Fernet.generate_key())])
    # THEN the reader gets the placeholders, no value
    assert unseal(stored, None) == ({"content": stored["content"]}, [])
    assert unseal(stored, other) == ({"content": stored["content"]}, [])


def test_no_key_stores_it_masked_and_the_scan_calls_it_lost() -> None:
    # GIVEN no vault key configured: WHEN a memory is stored
    stored = seal({"content": "電話は 090-1234-5678 ね"}, None)
    # THEN it is masked as before, and ``destroyed`` reports the placeholder with nothing behind it
    assert stored == {"content": "電話は [PHONE] ね"}
    assert destroyed(stored) == ["content"]


def test_a_placeholder_the_person_typed_is_not_a_value_and_a_rewrite_keeps_the_seals() -> None:
    # GIVEN a task body where the person typed a bracket word and a real address
    doc = {"body": "[EMAIL] 欄に hanako.sato@example.com を書いて送る", "status": "open"}
    stored = seal(doc, KEY)
    assert stored[SEALED_FIELD]["body"][0] is None
    # WHEN a handler reads it and writes it back with its status changed (read-modify-write)
    again = seal({**stored, "status": "done"}, KEY)
    # THEN the value is still sealed behind its placeholder, and the typed one stays words
    opened, values = unseal(again, KEY)
    assert opened["body"] == "[EMAIL] 欄に hanako.sato@example.com を書いて送る"
    assert values == ["hanako.sato@example.com"] and opened["status"] == "done"


def test_nested_texts_are_sealed_at_their_path() -> None:
    # GIVEN an episode-like document with lists and maps
    doc = {
        "story_text": "メモ: 070.1618.0339",
        "metadata": {"tags": ["連絡先"], "notes": ["mail a@example.jp"]},
    }
    stored = seal(doc, KEY)
    # THEN each string is sealed where it is, and opens to the same document
    assert set(stored[SEALED_FIELD]) == {"story_text", "metadata/notes/0"}
    assert unseal(stored, KEY)[0] == doc


def test_a_chunk_seals_only_the_values_of_its_own_part() -> None:
    # GIVEN a long kept text cut into parts
    text = "一つ目は 090-1111-2222 です。" + "あ" * 50 + "二つ目は b@example.com と 080-3333-4444 です。"
    stored, values = masked_values(text)
    start = stored.index("二つ目")
    part = stored[start:]
    # WHEN the second part is sealed on its own
    entries = seal_excerpt(stored, values, start, part, KEY)
    # THEN it carries exactly its two values, in order
    assert entries is not None and len(entries) == 2
    assert unseal({"text": part, SEALED_FIELD: {"text": entries}}, KEY)[1] == [
        "b@example.com",
        "080-3333-4444",
    ]
    assert seal_excerpt(stored, values, 0, "あ" * 50, KEY) is None


def test_only_the_values_opened_are_listed_for_the_reply() -> None:
    assert revealed([None, "090-1234-5678"]) == {"_revealed": ["090-1234-5678"]}
    assert revealed([]) == {}


def test_a_task_is_read_in_clear_by_its_creator_and_its_assignee_only() -> None:
    # GIVEN a task 鈴木 created for 田中
    task = Task(task_id="t-1", body="[EMAIL] へ見積書", assignee_id="acct-tanaka", created_by="u-suzuki")
    # THEN its creator and its assignee read it in clear; a manager of level 6 or a colleague does not
    assert reads_in_clear(task, "u-suzuki", "acct-suzuki")
    assert reads_in_clear(task, "u-tanaka", "acct-tanaka")
    assert not reads_in_clear(task, "u-kazu", "acct-kazu")
    assert not reads_in_clear(task, "u-yamada", None)
