"""Fine-tuning staging (seed 001 §29): good and corrected turns staged, reviewed by a named
level-6 person and exported with a dataset card. ``state/`` holds the pipeline (``staging``,
``review``, ``export``, ``formats``, ``pseudonyms``, ``config``: the organisation's consent);
``cli.py`` is ``charter ft``; ``admin.py`` is ``/api/ft``.
"""
