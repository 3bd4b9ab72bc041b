"""Operations: what the observer records and what operators read, check and control.

=====================  ===================================================================
``callctx``            the turn the current code works for (set by the layer runner)
``llm_calls``          ``LLMCallLog``: the LLM port decorator that logs every call (masked)
``queries``            reading records, LLM calls and comparisons; days and thresholds
``metrics``            the seed §15.1 metrics over windows, and threshold breaches (pure)
``monitoring``         today's panel, chart series, threshold/cost checks, the heartbeat
``cost``               tokens, cache hits and cost against the budget
``audit``              the seed §4.8 constitution audit
``replay``             today's guardian/authorization/dry-run executor on a recorded turn
``overlay_store``      the store replay writes to (reads through, keeps writes)
``alerts``             stored, deduplicated alerts and their delivery
``notify``             the notifier port and its adapters (room, webhook, e-mail)
``controls``           emergency stop / pause / resume as audited overrides
``schema``             the BigQuery table schema generated from the record model
``render``, ``cli``    the ``charter`` operator commands
=====================  ===================================================================
"""
