"""The examples in the product's docstrings run, and say what the code does.

Every module of ``shared_lib`` and ``infra`` with a ``>>>`` example is imported and its examples
run (``doctest``, as ``python -m doctest`` would): an example that drifted from the code fails
here, naming the module and the example, instead of telling a reader something untrue."""

from __future__ import annotations

import doctest
import importlib
import io
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ROOTS = ("shared_lib", "infra")


def _modules() -> list[str]:
    names = []
    for root in ROOTS:
        for path in sorted((REPO / root).rglob("*.py")):
            if ".venv" in path.parts or "__pycache__" in path.parts:
                continue
            if ">>> " not in path.read_text(encoding="utf-8"):
                continue
            parts = path.relative_to(REPO).with_suffix("").parts
            names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


MODULES = _modules()


def test_the_examples_are_found() -> None:
    # the finder itself can fail: a tree with examples must give a few dozen modules
    assert len(MODULES) > 100 and "shared_lib.memory.keyword" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_the_module_s_examples_hold(name: str) -> None:
    module = importlib.import_module(name)
    out = io.StringIO()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    tests = doctest.DocTestFinder().find(module, name)
    for test in tests:
        runner.run(test, out=out.write)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, out.getvalue()[-4000:]
