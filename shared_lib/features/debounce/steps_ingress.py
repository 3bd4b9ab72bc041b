"""The ingress's side of the debounce (seed 001 §7.3): a message of a channel with a window is
held in its sender's buffer in the room before its turn is published, and taken back when the
publish fails. The ingress reaches it as ``rt.hooks.inbound_buffer`` (this room's manifest lends
it), never by import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared_lib.features.debounce import state as debounce
from shared_lib.turn.inbound import InboundMessage

if TYPE_CHECKING:
    from shared_lib.runtime import Runtime


class Buffer:
    """``shared_lib.runtime.InboundBuffer`` over ``state``'s buffer."""

    def hold(self, rt: Runtime, msg: InboundMessage, *, entry_id: str, turn_id: str) -> str | None:
        """The buffer's path when the message is held; ``None`` when its channel has no window,
        no vault key seals the texts, or the buffer is full (the message goes alone)."""
        if rt.vault is None or not debounce.window(rt.settings.debounce_seconds, msg.channel):
            return None
        path = debounce.buffer_path(msg.org_id, msg.channel, msg.room_id, msg.user_id)
        now = rt.clock()
        # a yes or a no to a pending confirmation is a barrier: answered at once, never gathered
        prompt = debounce.answers_pending(
            rt.store, msg.org_id, msg.conversation_key, msg.text, rt.policy.confirmation, now
        )
        appended = debounce.append(
            rt.store,
            path,
            entry_id=entry_id,
            turn_id=turn_id,
            message_id=msg.message_id,
            text=msg.text,
            now=now,
            cipher=rt.vault.for_org(msg.org_id),
            sent=msg.sent_at,
            prompt=prompt,
        )
        return path if appended else None

    def release(self, rt: Runtime, path: str, entry_id: str) -> None:
        debounce.remove(rt.store, path, entry_id)


BUFFER = Buffer()
