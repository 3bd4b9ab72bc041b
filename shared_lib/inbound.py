"""The one inbound message model every channel normalises to."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

ChannelName = Literal["chatwork", "line", "slack", "http"]
MAX_TEXT_CHARS = 8000


class InboundMessage(BaseModel):
    """A user's message, provider-neutral. ``event_id`` is the provider's delivery id (dedupe key)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    channel: ChannelName
    org_id: Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_.\-]+$")]
    room_id: Annotated[str, Field(min_length=1, max_length=256)]
    thread_id: str | None = None
    user_id: Annotated[str, Field(min_length=1, max_length=256)]
    user_name: str | None = None
    text: Annotated[str, Field(max_length=MAX_TEXT_CHARS)]
    message_id: Annotated[str, Field(min_length=1, max_length=256)]
    event_id: Annotated[str, Field(min_length=1, max_length=256)]
    reply_handle: dict[str, str] = Field(default_factory=dict)
    language: str = "ja"
    addressed: bool = True
    is_redelivery: bool = False
    received_at: datetime

    @property
    def conversation_key(self) -> str:
        """Ordering key: one conversation = one (org, room, user)."""
        return f"{self.org_id}/{self.room_id}/{self.user_id}"
