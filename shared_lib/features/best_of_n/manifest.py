"""The Best-of-N feature: the reply's text chosen among N candidates (``shared_lib.features.best_of_n``)."""

from __future__ import annotations

from shared_lib.features.best_of_n import steps
from shared_lib.features.manifest import Manifest
from shared_lib.runtime import Hooks

MANIFEST = Manifest(
    name="best_of_n",
    summary="the reply's text chosen among N candidates by an evaluator, per organisation (seed 001 §3-4)",
    collections=("evaluations",),
    hooks=Hooks(phrasing=steps),
)
