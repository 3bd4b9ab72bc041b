"""The Context Builder (seed 000 §6.1): what the brain knows when it proposes.

Public surface: ``ContextBuilder``, ``ContextConfig``, ``ContextInput``, ``BuiltContext``,
``SourceRecord`` (``builder``); ``record`` / ``render_recorded`` / ``summary_line``
(``record``); conversation memory ``append_message``, ``history_path``,
``recent_messages`` (``history``).
"""

from shared_lib.context.builder import BuiltContext, ContextBuilder, ContextConfig, ContextInput, SourceRecord
from shared_lib.context.history import append_message, history_path, recent_messages
from shared_lib.context.record import record, render_recorded, summary_line

__all__ = [
    "BuiltContext",
    "ContextBuilder",
    "ContextConfig",
    "ContextInput",
    "SourceRecord",
    "append_message",
    "history_path",
    "recent_messages",
    "record",
    "render_recorded",
    "summary_line",
]
