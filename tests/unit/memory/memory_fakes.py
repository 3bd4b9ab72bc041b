"""A small deterministic ``Embedder`` for the memory tests: hashed character bigrams and
unigrams of the NFKC text into 256 dimensions, unit length. It is NOT a sentence model (the
real one, multilingual-e5-small, comes with the local embedder adapter); texts that
share characters are near, which is enough to test the plumbing and the fusion. The search's
paraphrase quality is measured by ``infra/bench/recall.py`` with the real model."""

from __future__ import annotations

import hashlib
import math
import unicodedata
from collections.abc import Sequence

from shared_lib.ports import EmbedKind, Vector


class NgramEmbedder:
    def __init__(self, name: str = "test-ngram", dimensions: int = 256) -> None:
        self.name = name
        self.dimensions = dimensions
        self.calls: list[tuple[int, EmbedKind]] = []

    def _one(self, text: str) -> Vector:
        s = unicodedata.normalize("NFKC", text).lower()
        grams = [s[i : i + 2] for i in range(len(s) - 1)] + list(s)
        v = [0.0] * self.dimensions
        for g in grams:
            if g.strip():
                v[int(hashlib.sha256(g.encode()).hexdigest()[:8], 16) % self.dimensions] += 1.0
        norm = math.sqrt(sum(x * x for x in v)) or 1.0
        return Vector(x / norm for x in v)

    def embed(self, texts: Sequence[str], *, kind: EmbedKind) -> list[Vector]:
        self.calls.append((len(texts), kind))
        return [self._one(t) for t in texts]
