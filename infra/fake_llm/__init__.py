"""Fake Anthropic Messages API for local runs and tests (see ``README.md`` in this folder).

>>> from infra.fake_llm import FakeAnthropicServer, Scenario
>>> with FakeAnthropicServer(Scenario.from_file(SCENARIOS_DIR / "demo.toml")) as server:
...     server.requests
[]
"""

from pathlib import Path

from infra.fake_llm.scenario import (
    Decision,
    Fault,
    Match,
    MessagesRequest,
    Reply,
    Rule,
    Scenario,
    ScenarioEngine,
    ScenarioError,
)
from infra.fake_llm.server import FakeAnthropicServer, PromptCache, RecordedRequest, estimate_tokens

SCENARIOS_DIR = Path(__file__).parent / "scenarios"

__all__ = [
    "SCENARIOS_DIR",
    "Decision",
    "FakeAnthropicServer",
    "Fault",
    "Match",
    "MessagesRequest",
    "PromptCache",
    "RecordedRequest",
    "Reply",
    "Rule",
    "Scenario",
    "ScenarioEngine",
    "ScenarioError",
    "estimate_tokens",
]
