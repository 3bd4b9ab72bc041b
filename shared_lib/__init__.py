"""Charter: the LLM proposes; the charter decides.

The importable product package. Layers are plain functions over the `Turn` envelope
(`shared_lib.turn.envelope`); ports are `typing.Protocol`s (`shared_lib.ports`) with peer
adapters in `shared_lib.adapters`; `shared_lib.runtime` is the composition root.
"""

__version__ = "0.1.0"
