"""Operations, the read side: what operators read, check and control.

=====================  ===================================================================
``queries``            reading records, LLM calls and comparisons; days and thresholds
``metrics``            the seed §15.1 metrics over windows, and threshold breaches (pure)
``monitoring``         today's panel, chart series, threshold/cost checks, the heartbeat
``cost``               tokens, cache hits and cost against the budget
``audit``              the seed §4.8 constitution audit over a period
``replay``             today's guardian/authorization/dry-run executor on a recorded turn
``overlay_store``      the store replay writes to (reads through, keeps writes)
``controls``           emergency stop / pause / resume as audited overrides
``schema``             the BigQuery table schema generated from the record model
``render``             tables and trails for the ``charter`` commands (``shared_lib.cli``)
=====================  ===================================================================

What the layers write while they work (alerts, notifiers, the LLM call log, the per-record
constitution findings) is the write side, ``shared_lib.telemetry``.
"""
