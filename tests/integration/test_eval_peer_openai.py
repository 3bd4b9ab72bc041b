"""``charter eval run --peer NAME`` against a configured OpenAI-compatible peer: the real
``openai`` SDK through the product's adapter to the fake chat completions server on 127.0.0.1
(the scripted model answers). The report names the peer and the model it served, and the cost
is the peer's model's price, not Claude's."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from infra import cli
from infra.fake_openai import FakeOpenAIServer

SERVED = {"claude-sonnet-4-6": "qwen2.5:32b", "claude-haiku-4-5": "qwen2.5:7b"}
PRICE = {"input": 0.5, "output": 2.0, "cache_write": 0.0, "cache_read": 0.0}  # USD per million tokens


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    fake = FakeOpenAIServer().start()
    yield fake
    fake.stop()


@pytest.fixture
def configured(server: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two peers configured (Anthropic first, as shipped), and a price table knowing the local models."""
    peers = {
        "peers": [
            {"name": "anthropic", "kind": "anthropic", "api_key_setting": "anthropic_api_key"},
            {
                "name": "local-qwen",
                "kind": "openai_compatible",
                "local": True,
                "base_url": server.url + "/v1",
                "models": SERVED,
            },
        ]
    }
    prices = json.loads(Path("shared_lib/config/prices.json").read_text(encoding="utf-8"))
    prices["per_million_tokens"].update({model: PRICE for model in SERVED.values()})
    (tmp_path / "prices.json").write_text(json.dumps(prices), encoding="utf-8")
    monkeypatch.setenv("CHARTER_PEERS", json.dumps(peers))
    monkeypatch.setenv("CHARTER_PRICES", str(tmp_path / "prices.json"))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)


@pytest.mark.usefixtures("configured")
def test_the_set_runs_against_an_openai_compatible_peer(
    server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    # WHEN a few cases run against the local peer, by name
    assert cli.main(["eval", "run", "--peer", "local-qwen", "--limit", "4", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    # THEN only that peer ran, named with the model it serves, over HTTP to the server
    [peer] = out["brains"]
    assert (peer["brain"], peer["peer"], peer["model"]) == ("peer:local-qwen", "local-qwen", "qwen2.5:32b")
    assert "local-qwen (model qwen2.5:32b)" in out["note"]
    calls = [r for r in server.requests if r["path"] == "/v1/chat/completions"]
    assert peer["cost"]["llm_calls"] == len(calls) > 0 and peer["errors"] == 0
    assert {r["body"]["model"] for r in calls} <= set(SERVED.values())
    # AND the cost is the tokens at the peer's models' price
    tokens_in, tokens_out = peer["cost"]["input_tokens"], peer["cost"]["output_tokens"]
    expected = (tokens_in * PRICE["input"] + tokens_out * PRICE["output"]) / 1_000_000
    assert tokens_in > 0 and peer["cost"]["total_usd"] == pytest.approx(expected, abs=1e-6)


@pytest.mark.usefixtures("configured")
def test_the_text_report_prints_the_peer_and_model(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["eval", "run", "--peer", "local-qwen", "--brain", "legacy", "--limit", "2"]) == 0
    text = capsys.readouterr().out
    assert "── legacy: " in text and re.search(
        r"── peer local-qwen, model qwen2\.5:32b: \d/2 cases passed", text
    )


@pytest.mark.usefixtures("configured")
def test_an_unknown_peer_or_one_without_its_key_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["eval", "run", "--peer", "gpt-nowhere", "--limit", "1"]) == 2
    assert "unknown peer 'gpt-nowhere' (configured: anthropic, local-qwen)" in capsys.readouterr().err
    assert cli.main(["eval", "run", "--peer", "anthropic", "--limit", "1"]) == 2
    assert "peer 'anthropic': no API key" in capsys.readouterr().err
