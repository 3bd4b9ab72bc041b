"""An embedded ``Channel`` that keeps what was sent in memory (demo and unit tests)."""

from __future__ import annotations

import threading

from shared_lib.ports import OutboundReply, SendResult


class RecordingChannel:
    def __init__(self, name: str) -> None:
        self.name = name
        self.sent: list[OutboundReply] = []
        self._lock = threading.Lock()

    def send(self, reply: OutboundReply) -> SendResult:
        with self._lock:
            self.sent.append(reply)
            return SendResult(ok=True, provider_message_id=f"{self.name}-{len(self.sent)}", status=200)
