"""The BigQuery table schema of ``turns.events``, generated from ``ObservabilityRecord``.

The table (``terraform/modules/bigquery/turn_events_schema.json``) is filled by a Pub/Sub
BigQuery subscription with ``use_table_schema`` and ``drop_unknown_fields``: a message's
JSON fields land in the columns of the same name. Every event shares the header columns;
only ``event_id`` and ``kind`` are required, because alerts and heartbeats carry no turn.

Type mapping: ``str`` STRING, ``int`` INTEGER, ``float`` FLOAT, ``bool`` BOOLEAN,
``datetime`` TIMESTAMP, a nested model RECORD, ``list[...]`` REPEATED, anything free-form
(``dict``, ``Any``, and lists of them) one JSON column.

>>> [c["name"] for c in bigquery_schema()][:3]
['event_id', 'kind', 'code']
"""

from __future__ import annotations

import json
import types
import typing
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from shared_lib.observability.records import ObservabilityRecord

REQUIRED_COLUMNS = frozenset({"event_id", "kind"})
_SCALARS: dict[type, str] = {
    str: "STRING",
    int: "INTEGER",
    float: "FLOAT",
    bool: "BOOLEAN",
    datetime: "TIMESTAMP",
}


def _unwrap_optional(annotation: Any) -> tuple[Any, bool]:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0], True
        return Any, True
    return annotation, False


def _column(name: str, annotation: Any, description: str, *, required: bool) -> dict[str, Any]:
    inner, optional = _unwrap_optional(annotation)
    mode = "REQUIRED" if required and not optional else "NULLABLE"
    if typing.get_origin(inner) is list:
        (item,) = typing.get_args(inner) or (Any,)
        if (
            _bq_type(_unwrap_optional(item)[0]) == "JSON"
        ):  # a free-form list is one JSON value, not ARRAY<JSON>
            return {"name": name, "type": "JSON", "mode": "NULLABLE", "description": description}
        repeated = _column(name, item, description, required=False)
        repeated["mode"] = "REPEATED"
        return repeated
    column: dict[str, Any] = {"name": name, "type": _bq_type(inner), "mode": mode}
    if isinstance(inner, type) and issubclass(inner, BaseModel):
        column["fields"] = _fields(inner, required_names=frozenset())
    if description:
        column["description"] = description
    return column


def _bq_type(annotation: Any) -> str:
    if typing.get_origin(annotation) is Literal:
        return "STRING"
    if isinstance(annotation, type):
        if issubclass(annotation, BaseModel):
            return "RECORD"
        for py, bq in _SCALARS.items():
            if annotation is py:
                return bq
    return "JSON"


def _fields(model: type[BaseModel], *, required_names: frozenset[str]) -> list[dict[str, Any]]:
    out = []
    for name, info in model.model_fields.items():
        assert isinstance(info, FieldInfo)
        out.append(_column(name, info.annotation, info.description or "", required=name in required_names))
    return out


def bigquery_schema() -> list[dict[str, Any]]:
    """The ``turn_events`` columns, in the record's field order."""
    return _fields(ObservabilityRecord, required_names=REQUIRED_COLUMNS)


def bigquery_schema_json() -> str:
    """The exact text of ``turn_events_schema.json`` (2-space indent, trailing newline)."""
    return json.dumps(bigquery_schema(), indent=2, ensure_ascii=False) + "\n"
