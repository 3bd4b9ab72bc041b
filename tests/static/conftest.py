"""Fixtures of the static tests: the repository root and a disposable copy of its deployment files.

The helper module ``charter_static_checks`` sits beside this file; its directory is put on
``sys.path`` here so the tests import it the same way under any pytest import mode.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

REPO_ROOT = HERE.parent.parent

# What the static checks read: enough to rebuild the tree in a temporary directory.
DEPLOYMENT_FILES = ("Dockerfile", ".dockerignore", "cloudbuild.yaml")


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The repository under test."""
    return REPO_ROOT


# Source trees the checks read: terraform, and the product source that names the env vars it reads.
SOURCE_TREES = ("terraform", "shared_lib", "functions")


@pytest.fixture
def repo_copy(tmp_path: Path) -> Path:
    """A copy of terraform/, shared_lib/, functions/, the Dockerfile, .dockerignore and cloudbuild.yaml.

    Mutation tests break one rule in the copy and run the same check on it.
    """
    for tree in SOURCE_TREES:
        shutil.copytree(
            REPO_ROOT / tree,
            tmp_path / tree,
            ignore=shutil.ignore_patterns(
                ".terraform", "*.tfstate*", ".terraform.lock.hcl", "__pycache__", "*.pyc"
            ),
        )
    for name in DEPLOYMENT_FILES:
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO_ROOT / name, target)
    return tmp_path
