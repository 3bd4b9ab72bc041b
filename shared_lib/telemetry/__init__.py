"""The write side of operations: what the layers record while they work.

=================  ===================================================================
``alerts``         stored, deduplicated alerts and their delivery to the notifiers
``notify``         the notifier port and its adapters (room, webhook, e-mail)
``llm_calls``      ``LLMCallLog``: the LLM port decorator that logs every call (masked)
``findings``       the constitution checks of one observability record
=================  ===================================================================

It imports no layer and not the runtime (each function declares the few services it uses),
so the runtime, the layers and the operators' read side (``shared_lib.ops``) can all use it.
The call context every log line and LLM call is attributed to is ``shared_lib.turn.callctx``.
"""
