"""Persona learning (seed 001 §16): what an organisation teaches the persona, kept beside its
immutable core. ``store.py`` is the organisation's extension (``persona_ext``: the allowed keys
of ``shared_lib.persona.ext``, learned from finished turns); ``cli.py`` is ``charter persona``.
"""
