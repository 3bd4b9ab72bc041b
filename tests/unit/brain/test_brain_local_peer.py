"""Local-only on a local model (seed 003 /local): a ``/local`` conversation's turns are proposed
and phrased by the LLM arm on a peer marked ``local``, never a cloud one; the legacy brain answers
only when no local peer is configured or healthy, and the record says which. ``/local`` is the
conversation's until ``/cloud``: it does not lapse with the 30-minute session. In process, over
the real layers and the real peer router, with two counting fake peers."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from brain_fakes import FakeLLM, decision, runtime, served, text, text_answer

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.errors import LLMError
from shared_lib.peers.config import PeersConfig
from shared_lib.persona.catalogue import load_persona
from shared_lib.ports import LLMRequest, LLMResponse, PeerHealth
from shared_lib.prices import PriceTable
from shared_lib.settings import Settings
from shared_lib.wiring.composition import peer_router, wire_inprocess

PERSONA = load_persona()
LOCAL_REPLY = "お給料のことなら、まず就業規則を一緒に見てみるウル🐺"


class Peer(FakeLLM):
    """An ``LLMPeer`` over a counting fake LLM; ``down`` makes every call fail as unavailable."""

    kind = "openai_compatible"

    def __init__(self, name: str, *, local: bool, reply: str) -> None:
        super().__init__(
            default=lambda r: decision(text(reply)) if r.call_type == "proposal" else text_answer(reply)
        )
        self.name, self.local, self.down = name, local, False
        self.max_context_tokens, self.supports_parallel = 32_768, False

    def complete(self, request: LLMRequest) -> LLMResponse:
        if self.down:
            self.requests.append(request)
            raise LLMError("llm_unavailable", "connection refused")
        return super().complete(request)

    def health(self) -> PeerHealth:
        return PeerHealth(healthy=not self.down, checked_at=self.clock(), latency_ms=1.0)

    clock: Any = None


class Stack:
    """A wired runtime whose LLM is the peer router over a cloud peer and, unless ``routing``
    leaves it out, a local one; ``say`` runs one turn and counts each peer's requests."""

    def __init__(self, routing: dict[str, list[str]] | None = None) -> None:
        self.cloud = Peer("cloud", local=False, reply="クラウドからの返事ウル🐺")
        self.local = Peer("local", local=True, reply=LOCAL_REPLY)
        config = PeersConfig.model_validate(
            {
                "peers": [
                    {"name": "cloud", "kind": "anthropic"},
                    {"name": "local", "kind": "openai_compatible", "local": True, "base_url": "http://x/v1"},
                ],
                "routing": routing or {},
            }
        )
        settings = Settings.from_env({"CHARTER_ENV": "test", "CHARTER_LLM_CALL_LOG": "0"})
        store = MemoryStore()
        router = peer_router(
            config, {"cloud": self.cloud, "local": self.local}, settings, store, PriceTable.load()
        )
        self.rt = runtime(router)
        self.rt.llm.board.store = self.rt.store  # type: ignore[union-attr]
        Peer.clock = self.rt.clock
        wire_inprocess(self.rt)
        self.n = 0

    def say(self, message: str) -> tuple[str, dict[str, Any], int, int]:
        """(reply, record, cloud requests, local requests) of one turn."""
        self.n += 1
        cloud, local = len(self.cloud.requests), len(self.local.requests)
        reply, record = served(self.rt, message, f"e{self.n}")
        return reply, record, len(self.cloud.requests) - cloud, len(self.local.requests) - local


def brain_reason(record: dict[str, Any]) -> str:
    return next(e["reason_code"] for e in record["trail"] if e["layer"] == "brain")


def test_given_local_with_a_question_when_a_local_peer_exists_then_it_answers_and_the_cloud_gets_nothing():
    stack = Stack()
    # WHEN a person switches to local-only with their question on the same line
    reply, record, cloud, local = stack.say(
        "/local 給与の件で相談があります🙏 残業代の計算ってどうなってる？"
    )
    # THEN the LLM arm answered on the local peer, and the cloud peer received zero requests
    assert cloud == 0 and local >= 1
    assert record["arm"] == "llm" and record["route"]["local_only"] is True
    assert record["route"]["peers"] == ["local"] and LOCAL_REPLY in reply
    # AND a later question of the same conversation stays local too
    reply, record, cloud, local = stack.say("ありがとう！　じゃあ有給の残り日数も教えてほしい")
    assert cloud == 0 and local >= 1 and record["route"]["peers"] == ["local"]


def test_given_full_width_local_when_cloud_is_sent_then_the_cloud_peer_serves_again():
    stack = Stack()
    # GIVEN the conversation switched with a full-width command, confirmed without any model
    reply, _, cloud, local = stack.say("／ｌｏｃａｌ")
    assert reply == PERSONA.message("route.local_on") and "/cloud" in reply and cloud == local == 0
    assert stack.say("来週の会議の段取り、どうしよう")[2] == 0
    # WHEN the person lifts it, with words after the command
    stack.say("/cloud に戻して")
    _, record, cloud, _ = stack.say("来週の会議の段取り、どうしよう")
    # THEN the cloud peer serves the conversation again
    assert cloud >= 1 and record["route"]["local_only"] is False and "cloud" in record["route"]["peers"]


def test_given_the_local_peer_down_when_local_only_then_the_legacy_brain_answers_and_no_cloud_call():
    stack = Stack()
    stack.say("/local")
    stack.local.down = True
    # WHEN a question comes while the only local peer fails
    reply, record, cloud, _ = stack.say("体調管理のコツを教えてー")
    # THEN the legacy brain answers, says why, and the cloud peer was never asked
    assert reply.strip() and cloud == 0 and record["arm"] == "legacy"
    # (the classifier's call may see the failure first and mark the peer down before the proposal)
    assert brain_reason(record) in (
        "route.local_only.local_peer_failed",
        "route.local_only.local_peer_unhealthy",
    )
    # AND the peer is now marked down: the next turn goes to the legacy brain without trying it
    reply, record, cloud, local = stack.say("もう一回聞くね、体調管理のコツは？")
    assert cloud == 0 and local == 0 and brain_reason(record) == "route.local_only.local_peer_unhealthy"


def test_given_a_misconfiguration_routing_the_proposal_only_to_the_cloud_then_nothing_leaks():
    # GIVEN peers whose routing sends proposals and phrasing only to the cloud peer
    stack = Stack(routing={"proposal": ["cloud"], "phrasing": ["cloud"], "classification": ["cloud"]})
    stack.say("/local")
    # WHEN a local-only question comes
    reply, record, cloud, local = stack.say("田中さんに見積書のタスクをお願い")
    # THEN no local peer serves its proposal: the legacy brain answers and the cloud got zero requests
    assert reply.strip() and cloud == 0 and local == 0
    assert brain_reason(record) == "route.local_only.no_local_peer"


def test_given_local_when_the_session_expires_then_the_conversation_is_still_local_only():
    stack = Stack()
    stack.say("/local")
    # WHEN the person comes back after lunch, long past the 30-minute session
    later = stack.rt.clock() + timedelta(hours=3)
    stack.rt.clock = lambda: later  # type: ignore[method-assign]
    _, record, cloud, _ = stack.say("さっきの続きだけど、経費精算の締め日っていつだっけ")
    # THEN it is still local-only: no request reached the cloud
    assert record["route"]["local_only"] is True and cloud == 0
