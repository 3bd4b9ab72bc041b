"""``charter eval run --brain claude`` through the real Anthropic adapter and SDK, pointed at the
fake Anthropic server on 127.0.0.1 (the scripted model answers): the Claude path of the harness."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from infra import cli
from infra.fake_llm import FakeAnthropicServer


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    fake = FakeAnthropicServer().start()
    yield fake
    fake.stop()


def test_the_claude_brain_runs_through_the_anthropic_adapter(
    server: FakeAnthropicServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a configured Anthropic endpoint and key (the settings read them)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    # WHEN the default brains run a few cases
    assert cli.main(["eval", "run", "--json", "--limit", "4", "--model", "claude-sonnet-4-6"]) == 0
    out = json.loads(capsys.readouterr().out)
    # THEN the legacy brain and Claude ran, and Claude's calls went over HTTP to the server
    assert [b["brain"] for b in out["brains"]] == ["legacy", "claude"]
    assert "LLM configured" in out["note"] and server.url in out["note"]
    claude = out["brains"][1]
    calls = [r for r in server.requests if r["path"] == "/v1/messages"]
    assert claude["cost"]["llm_calls"] == len(calls) > 0
    assert {r["body"]["model"] for r in calls} <= {"claude-sonnet-4-6", "claude-haiku-4-5"}
    assert claude["cost"]["total_usd"] > 0 and claude["errors"] == 0 and out["leaks"] == 0
