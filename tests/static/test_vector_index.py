"""The Firestore vector index Terraform declares serves the vector search the code runs.

``find_nearest`` on Firestore needs a composite vector index whose equality fields are the
query's ``where`` fields and whose vector field has the query vector's dimension: a vector of
another dimension is not in the index, and a filter the index does not cover fails the query in
the cloud (the emulator needs no index, so only this test catches a drift). The index is read
from ``terraform/modules/firestore`` with the HCL parser; the dimension is the one the Vertex
embedder reports for the model the cloud services embed with; the fields are the chunk
contract of issue 20 (``where=[("model", "==", embedder.name)]`` on ``embedding``) and, once
the memory room calls ``find_nearest`` with literal fields, those calls too.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

from charter_static_checks import blocks, tf_files

from shared_lib.adapters.embedder_vertex import VertexEmbedder
from shared_lib.settings import Settings

COLLECTION = "memory_chunks"
VECTOR_FIELD = "embedding"
FILTER_FIELDS = ("model",)


def cloud_embedding_model(root: Path) -> str:
    """``CHARTER_EMBEDDING_MODEL`` as Terraform gives it, else the settings' default."""
    for path in tf_files(root):
        found = re.search(r'CHARTER_EMBEDDING_MODEL\s*=\s*"([^"]+)"', path.read_text(encoding="utf-8"))
        if found:
            return found.group(1)
    return str(Settings.model_fields["embedding_model"].default)


def vector_indexes(root: Path) -> list[dict[str, Any]]:
    """The ``google_firestore_index`` blocks of ``COLLECTION`` with a vector field."""
    out = []
    for index in blocks(root, type_="google_firestore_index"):
        fields = index.body.get("fields") or []
        if index.body.get("collection") == COLLECTION and any("vector_config" in f for f in fields):
            out.append(index.body)
    return out


def search_calls(root: Path) -> list[tuple[str, str | None, tuple[str, ...] | None]]:
    """``(file, field, where fields)`` of every ``find_nearest`` call in ``shared_lib`` outside
    the adapters (``None`` where the argument is not a literal)."""
    calls = []
    for path in sorted((root / "shared_lib").rglob("*.py")):
        if "adapters" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "find_nearest"):
                continue
            kwargs = {k.arg: k.value for k in node.keywords}
            field = kwargs.get("field")
            where = kwargs.get("where")
            names: tuple[str, ...] | None = None
            if isinstance(where, ast.List | ast.Tuple) and all(
                isinstance(e, ast.Tuple) and isinstance(e.elts[0], ast.Constant) for e in where.elts
            ):
                names = tuple(str(e.elts[0].value) for e in where.elts)  # type: ignore[attr-defined]
            calls.append(
                (str(path.relative_to(root)), field.value if isinstance(field, ast.Constant) else None, names)
            )
    return calls


def check_vector_index(root: Path) -> list[str]:
    indexes = vector_indexes(root)
    if len(indexes) != 1:
        return [f"want one vector index on {COLLECTION}, found {len(indexes)}"]
    (index,) = indexes
    violations = []
    if index.get("query_scope") != "COLLECTION":
        violations.append(f"query_scope {index.get('query_scope')!r}: the search queries one collection")
    fields = index["fields"]
    ordered = [(f["field_path"], f.get("order")) for f in fields[:-1]]
    wanted = [(name, "ASCENDING") for name in FILTER_FIELDS] + [("__name__", "ASCENDING")]
    if ordered != wanted:
        violations.append(f"equality fields {ordered}, the search filters on {wanted}")
    vector = fields[-1]
    config = (vector.get("vector_config") or [{}])[0]
    if vector.get("field_path") != VECTOR_FIELD or "flat" not in config:
        violations.append(f"the last field must be the flat vector field {VECTOR_FIELD!r}")
    model = cloud_embedding_model(root)
    dimensions = VertexEmbedder(project="p", location="asia-northeast1", model=model).dimensions
    if config.get("dimension") != dimensions:
        violations.append(
            f"dimension {config.get('dimension')}, the cloud's model {model} gives {dimensions}"
        )
    for file, field, where in search_calls(root):
        if field not in (None, VECTOR_FIELD):
            violations.append(f"{file}: find_nearest on {field!r}, the index is on {VECTOR_FIELD!r}")
        if where is not None and where != FILTER_FIELDS:
            violations.append(f"{file}: find_nearest filters on {where}, the index covers {FILTER_FIELDS}")
    return violations


def test_the_vector_index_matches_the_search_and_the_cloud_model(repo_root: Path) -> None:
    assert check_vector_index(repo_root) == []


def test_a_dimension_of_another_model_is_reported(repo_copy: Path) -> None:
    main = repo_copy / "terraform/modules/firestore/main.tf"
    main.write_text(main.read_text(encoding="utf-8").replace("dimension = 768", "dimension = 384"), "utf-8")
    assert check_vector_index(repo_copy) == [
        "dimension 384, the cloud's model text-multilingual-embedding-002 gives 768"
    ]


def test_a_filter_the_index_does_not_cover_is_reported(repo_copy: Path) -> None:
    search = repo_copy / "shared_lib/memory_probe.py"
    search.write_text(
        "def f(store, v):\n"
        "    return store.find_nearest('c', field='embedding', vector=v, limit=5,"
        " where=[('model', '==', 'm'), ('user_id', '==', None)])\n",
        "utf-8",
    )
    assert check_vector_index(repo_copy) == [
        "shared_lib/memory_probe.py: find_nearest filters on ('model', 'user_id'), the index covers ('model',)"
    ]
