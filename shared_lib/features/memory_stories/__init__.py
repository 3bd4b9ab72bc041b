"""Memory stories (seed 001 §21–22): episodes and tags, told from the organisation's turns.
``steps.py`` is what the background memory layer runs (the daily digest, tagging, an event
episode after a turn); ``cli.py`` is ``charter episodes`` and ``charter tags``.
"""
