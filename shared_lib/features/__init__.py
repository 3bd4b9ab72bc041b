"""Features: one room per feature (seed 001's extension surface), each declared by its manifest.

A room (``features/<name>/``) holds one feature vertically: its state and stores (the domain
floor), its steps (beside the layers), its ``cli.py`` and ``admin.py`` (the entry floor) and its
``manifest.py``, which the composition root registers (``shared_lib.wiring.features``). Nothing
of a room is imported here, so importing one module of a room loads nothing else.
"""
