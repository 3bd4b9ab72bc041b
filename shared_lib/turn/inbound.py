"""The one inbound message model every channel normalises to.

Its text and display name never hold an invisible character (``text_fold.strip_invisible``:
a bidi override, a zero-width space splitting a value): the channels strip them with the
control characters (``channels.base.clean_text``), and the model strips them again whoever
builds it (the demo, the debounce's merged message, a test), so none is stored or shown back.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator

from shared_lib.privacy.text_fold import strip_invisible

ChannelName = Literal["chatwork", "line", "slack", "http"]
CHANNEL_NAMES: tuple[ChannelName, ...] = get_args(ChannelName)
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
    # when the sender sent it, by the provider (ChatWork send_time, LINE timestamp, Slack ts, a
    # plain-HTTP caller's sent_at); None when not said. The debounce joins texts in this order.
    sent_at: datetime | None = None

    @field_validator("text", "user_name")
    @classmethod
    def _visible(cls, value: str | None) -> str | None:
        return None if value is None else strip_invisible(value)

    @property
    def conversation_key(self) -> str:
        """Ordering key: one conversation = one (org, room, user)."""
        return f"{self.org_id}/{self.room_id}/{self.user_id}"
