"""Thin functions-framework entrypoints, one module per layer. ``main.py`` exposes them all
so one container image serves every layer (the target selects one)."""
