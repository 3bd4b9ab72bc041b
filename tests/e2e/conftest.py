"""The whole local stack for end-to-end tests: started once per session (with fault
injection enabled so tests can make a layer fail), stopped by pid at the end.

Every wait on the stack takes its deadline from the product's budgets scaled by the machine's
load (``tests/e2e/waits.py``), and so does each e2e test's pytest timeout."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from infra import local_stack as stack_mod
from infra.emulators import Emulators, stop_on_sigterm
from infra.webhook_sender import WebhookResponse, send
from shared_lib.delivery.idempotency import claim_path
from tests.e2e import waits

CHAIN = ("context", "brain", "guardian", "authorizer", "executor", "responder")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """An e2e test's pytest timeout (the configured one, or its own marker's) scales with the load
    factor, as its waits do: a busy machine must not cut a wait the budgets still allow."""
    here = Path(__file__).resolve().parent
    factor = waits.load_factor()
    default = float(config.getini("timeout") or 0)
    for item in items:
        if here not in Path(str(item.path)).parents:
            continue
        marker = item.get_closest_marker("timeout")
        base = float(marker.args[0]) if marker and marker.args else default
        if base:
            item.add_marker(pytest.mark.timeout(base * factor))


@dataclass
class LocalStack:
    state: dict[str, Any]
    store: Any
    budgets: waits.Budgets = field(init=False)

    def __post_init__(self) -> None:
        self.budgets = waits.Budgets.of_stack(self.root)

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

    def send(self, channel: str, text: str, **options: Any) -> WebhookResponse:
        """A signed webhook to the stack's ingress; its acknowledgement may take as long as the
        work a turn's budget allows (the ingress's verify, dedupe and publish count in it)."""
        return send(self.ingress_url, channel, text, timeout=waits.scaled(self.budgets.stall), **options)

    def fake_channel_sent(self) -> list[dict[str, Any]]:
        """Every call the fake channels got, but an HTTP reply repeated under an Idempotency-Key the
        receiver already accepted (``duplicate``: delivered once, as the channel's contract says)."""
        with urllib.request.urlopen(self.url("fake_channels") + "/_admin/sent", timeout=10) as resp:
            return [c for c in json.loads(resp.read()) if not c.get("duplicate")]

    def fake_llm_requests(self, component: str = "fake_llm") -> list[dict[str, Any]]:
        """What a fake LLM received: ``fake_llm`` (the first peer) or ``fake_llm_fallback``."""
        with urllib.request.urlopen(self.url(component) + "/_admin/requests", timeout=10) as resp:
            return list(json.loads(resp.read()))

    def llm_requests(self, since: Mapping[str, int] | None = None) -> dict[str, list[dict[str, Any]]]:
        """What each fake LLM peer received (after ``since``, a peer's earlier count): which peer
        serves a call is the peer router's choice (one another test left unhealthy is passed over
        for a while), so a test reads them all."""
        fakes = [c for c in ("fake_llm", "fake_llm_fallback", "fake_openai") if c in self.state["components"]]
        return {fake: self.fake_llm_requests(fake)[(since or {}).get(fake, 0) :] for fake in fakes}

    def prompts(self) -> list[str]:
        """Every request any fake LLM peer received, as JSON text."""
        return [json.dumps(r, ensure_ascii=False) for got in self.llm_requests().values() for r in got]

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

    def wait_for(
        self,
        predicate: Callable[[], Any],
        seconds: float | None = None,
        *,
        progress: Callable[[], Any] | None = None,
        what: str = "condition",
        interval: float = waits.POLL_SECONDS,
    ) -> Any:
        """``predicate()``'s first truthy value, within ``seconds`` of the product's budgets
        (default: one turn's, ``budgets.turn``) times the load factor; with ``progress`` (default:
        the fake channel's log), a deadline passed while the stack still moves is extended."""
        return waits.wait_for(
            predicate,
            self.budgets.turn if seconds is None else seconds,
            budgets=self.budgets,
            progress=progress or self.sent_count,
            what=what,
            interval=interval,
        )

    def sent_count(self) -> int:
        """How many messages the fake channels were asked to send (any room): the stack's progress."""
        return len(self.fake_channel_sent())

    def claims(self, org: str, turn_id: str, step: int = 0) -> tuple[str, ...]:
        """The chain's layers that have claimed ``turn_id``'s step so far, with their claims' status."""
        found = []
        for layer in CHAIN:
            doc = self.store.get(claim_path(org, turn_id, layer, step))
            if doc:
                found.append(f"{layer}:{doc.get('status')}")
        return tuple(found)

    def record(self, org: str, turn_id: str, seconds: float | None = None) -> dict[str, Any]:
        """The turn's record, once the observer wrote it; progress is the turn's own claims."""
        return dict(
            self.wait_for(
                lambda: self.store.get(f"orgs/{org}/observability/{turn_id}"),
                seconds,
                progress=lambda: self.claims(org, turn_id),
                what=f"the record of {turn_id}",
            )
        )


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


@contextlib.contextmanager
def started_stack(
    tmp_path_factory: pytest.TempPathFactory, emulators: Emulators, name: str, **options: Any
) -> Iterator[LocalStack]:
    """A local stack (functions and fakes) on the session's emulators, in a project of its own
    (``charter-<name>``), so its topics, subscriptions and documents are its own; its processes
    are stopped by pid when it ends, also on a failure or an interrupt (the emulators live on)."""
    # as `charter local up` run in a checkout leaves it: <workdir>/.charter/local
    root: Path = tmp_path_factory.mktemp(f"charter-{name}") / ".charter" / "local"
    stop_on_sigterm(lambda: stack_mod.down(root=root))
    try:
        state = stack_mod.up(root=root, emulators=emulators, project=f"charter-{name}", **options)
        state["root"] = str(root)
        from shared_lib.adapters.firestore_store import FirestoreStore

        os.environ["FIRESTORE_EMULATOR_HOST"] = f"127.0.0.1:{state['components']['firestore']['port']}"
        os.environ["PUBSUB_EMULATOR_HOST"] = f"127.0.0.1:{state['components']['pubsub']['port']}"
        yield LocalStack(state=state, store=FirestoreStore(project=state["project"]))
    finally:
        stack_mod.down(root=root)


@pytest.fixture(scope="session")
def local_stack(tmp_path_factory: pytest.TempPathFactory, emulators: Emulators) -> Iterator[LocalStack]:
    """The stack every e2e module shares (fault injection on, a one-second flags cache): tests keep
    apart by their own organisations and rooms; a module that needs other settings starts its own
    stack on the same emulators (``started_stack``)."""
    with started_stack(tmp_path_factory, emulators, "local", fault_injection=True, flags_ttl=1.0) as stack:
        yield stack
        _no_placeholder_reached_a_user(stack)


@pytest.fixture(autouse=True)
def _stack_env(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the emulator hosts visible to the test body (the root autouse fixture restores env)."""
    if "local_stack" in request.fixturenames:
        stack: LocalStack = request.getfixturevalue("local_stack")
        comps = stack.state["components"]
        monkeypatch.setenv("FIRESTORE_EMULATOR_HOST", f"127.0.0.1:{comps['firestore']['port']}")
        monkeypatch.setenv("PUBSUB_EMULATOR_HOST", f"127.0.0.1:{comps['pubsub']['port']}")
