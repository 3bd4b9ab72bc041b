"""The whole local stack for end-to-end tests: started once per session (with fault
injection enabled so tests can make a layer fail), stopped by pid at the end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from infra import local_stack as stack_mod
from infra.emulators import stop_on_sigterm


@dataclass
class LocalStack:
    state: dict[str, Any]
    store: Any

    @property
    def ingress_url(self) -> str:
        return str(self.state["ingress_url"])

    @property
    def admin_url(self) -> str | None:
        return self.state.get("admin_url")

    @property
    def root(self) -> str:
        return str(self.state["root"])

    @property
    def workdir(self) -> Path:
        """Where an operator stands: the folder whose ``.charter/local`` the stack runs from."""
        return Path(self.state["root"]).parent.parent

    @property
    def firestore_host(self) -> str:
        return f"127.0.0.1:{self.state['components']['firestore']['port']}"

    @property
    def admin_token(self) -> str:
        """The operator credential `charter local up` made (the demo's CEO, platform)."""
        return str(self.state["operator_token"])

    @property
    def flags_ttl(self) -> float:
        """How long until every process's flags cache has expired."""
        return float(self.state.get("flags_ttl", 1.0)) + 0.5

    @property
    def project(self) -> str:
        return str(self.state["project"])

    def url(self, component: str) -> str:
        return str(self.state["components"][component]["url"])

    def fake_channel_sent(self) -> list[dict[str, Any]]:
        with urllib.request.urlopen(self.url("fake_channels") + "/_admin/sent", timeout=10) as resp:
            return list(json.loads(resp.read()))

    def fake_llm_requests(self, component: str = "fake_llm") -> list[dict[str, Any]]:
        """What a fake LLM received: ``fake_llm`` (the first peer) or ``fake_llm_fallback``."""
        with urllib.request.urlopen(self.url(component) + "/_admin/requests", timeout=10) as resp:
            return list(json.loads(resp.read()))

    def charter(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``charter …`` as an operator runs it: in the stack's work folder, nothing exported."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CHARTER_", "ANTHROPIC_"))}
        env.pop("FIRESTORE_EMULATOR_HOST", None)
        env.pop("PUBSUB_EMULATOR_HOST", None)
        return subprocess.run(
            [sys.executable, "-m", "shared_lib.cli", *args],
            cwd=self.workdir,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    def wait_for(self, predicate: Callable[[], Any], timeout: float = 60.0, interval: float = 0.25) -> Any:
        end = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > end:
                raise AssertionError(f"condition not met within {timeout}s")
            time.sleep(interval)

    def record(self, org: str, turn_id: str, timeout: float = 60.0) -> dict[str, Any]:
        return dict(self.wait_for(lambda: self.store.get(f"orgs/{org}/observability/{turn_id}"), timeout))


def _no_placeholder_reached_a_user(stack: LocalStack) -> None:
    """Issue 18's leak test over the whole e2e suite: every message any channel was sent
    during the session (replies, confirmations, announcements) is free of mask placeholders."""
    from infra.demo_cli import PLACEHOLDER

    sent = stack.fake_channel_sent()
    leaked = [
        (s.get("channel"), m)
        for s in sent
        for m in PLACEHOLDER.findall(json.dumps(s.get("body"), ensure_ascii=False))
    ]
    assert sent and not leaked, f"mask placeholders reached users: {leaked[:10]}"


@pytest.fixture(scope="session")
def local_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    # as `charter local up` run in a checkout leaves it: <workdir>/.charter/local
    root: Path = tmp_path_factory.mktemp("charter-workdir") / ".charter" / "local"
    stop_on_sigterm(lambda: stack_mod.down(root=root))
    state = stack_mod.up(root=root, fault_injection=True, flags_ttl=1.0)
    state["root"] = str(root)
    try:
        from shared_lib.adapters.firestore_store import FirestoreStore

        os.environ["FIRESTORE_EMULATOR_HOST"] = f"127.0.0.1:{state['components']['firestore']['port']}"
        os.environ["PUBSUB_EMULATOR_HOST"] = f"127.0.0.1:{state['components']['pubsub']['port']}"
        stack = LocalStack(state=state, store=FirestoreStore(project=state["project"]))
        yield stack
        _no_placeholder_reached_a_user(stack)
    finally:
        stack_mod.down(root=root)


@pytest.fixture(autouse=True)
def _stack_env(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the emulator hosts visible to the test body (the root autouse fixture restores env)."""
    if "local_stack" in request.fixturenames:
        stack: LocalStack = request.getfixturevalue("local_stack")
        comps = stack.state["components"]
        monkeypatch.setenv("FIRESTORE_EMULATOR_HOST", f"127.0.0.1:{comps['firestore']['port']}")
        monkeypatch.setenv("PUBSUB_EMULATOR_HOST", f"127.0.0.1:{comps['pubsub']['port']}")
