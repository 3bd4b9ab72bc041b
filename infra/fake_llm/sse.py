"""The Messages API's SSE events for a message, and a cut stream (the ``cut_stream`` fault).

The fake OpenAI-compatible server translates the same events into chat completion chunks,
so both fakes cut a stream at the same place.
"""

from __future__ import annotations

import json
from typing import Any

from infra.fake_llm.scenario import JSON

TEXT_CHUNK_CHARS = 12
JSON_CHUNK_CHARS = 16


def canonical(value: Any) -> str:
    """JSON with sorted keys (what a tool input is streamed as)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def compact(value: Any) -> str:
    """JSON as the real API sends it: compact, key order kept, UTF-8 (no ASCII escapes)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _chunks(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _block_start(block: JSON) -> JSON:
    if block["type"] == "tool_use":
        return {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
    return {"type": "text", "text": ""}


def _block_deltas(block: JSON, cut: bool) -> list[JSON]:
    """The deltas of one block; when ``cut``, only about the first half of them (at least one)."""
    if block["type"] == "tool_use":
        kind, field, pieces = (
            "input_json_delta",
            "partial_json",
            _chunks(canonical(block["input"]), JSON_CHUNK_CHARS),
        )
    else:
        kind, field, pieces = "text_delta", "text", _chunks(str(block.get("text", "")), TEXT_CHUNK_CHARS)
    if cut:
        whole = "".join(pieces)
        pieces = pieces[: len(pieces) // 2] if len(pieces) > 1 else [whole[: max(1, len(whole) // 2)]]
    if block["type"] == "tool_use":
        pieces = ["", *pieces]  # the real API opens tool input with an empty partial_json
    return [{"type": kind, field: piece} for piece in pieces if piece or kind == "input_json_delta"]


def stream_events(message: JSON, cut_after_blocks: int | None = None) -> tuple[list[tuple[str, JSON]], bool]:
    """The SSE events for a message, and whether the stream is complete.

    With ``cut_after_blocks=K`` the stream stops in the middle of block K (0-based, clamped to
    the last block): after some of its deltas, without content_block_stop / message_stop.
    """
    start = {
        **message,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {**message["usage"], "output_tokens": 1},
    }
    events: list[tuple[str, JSON]] = [
        ("message_start", {"type": "message_start", "message": start}),
        ("ping", {"type": "ping"}),
    ]
    blocks: list[JSON] = message["content"]
    cut_index = None if cut_after_blocks is None else min(cut_after_blocks, len(blocks) - 1)
    if cut_index is not None and cut_index < 0:
        return events, False
    for index, block in enumerate(blocks):
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": _block_start(block)},
            )
        )
        events += [
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
            for delta in _block_deltas(block, cut=index == cut_index)
        ]
        if index == cut_index:
            return events, False
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    delta = {"stop_reason": message["stop_reason"], "stop_sequence": message["stop_sequence"]}
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": delta,
                "usage": {"output_tokens": message["usage"]["output_tokens"]},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events, True


def sse_frame(name: str, data: JSON) -> bytes:
    return f"event: {name}\ndata: {compact(data)}\n\n".encode()
