"""One definition: the BigQuery table schema is generated from the record model."""

from __future__ import annotations

import json
import re
from pathlib import Path

from shared_lib.observability.records import ObservabilityRecord
from shared_lib.ops.schema import bigquery_schema, bigquery_schema_json

REPO = Path(__file__).resolve().parents[3]
TABLE_SCHEMA = REPO / "terraform" / "modules" / "bigquery" / "turn_events_schema.json"
TABLE_TF = REPO / "terraform" / "modules" / "bigquery" / "main.tf"


def columns() -> dict[str, dict]:
    return {c["name"]: c for c in bigquery_schema()}


def test_every_record_field_is_a_column_in_the_same_order():
    # GIVEN the record model WHEN the schema is generated THEN the columns are its fields
    assert [c["name"] for c in bigquery_schema()] == list(ObservabilityRecord.model_fields)


def test_only_the_event_header_is_required_so_alerts_share_the_table():
    required = {name for name, c in columns().items() if c["mode"] == "REQUIRED"}
    assert required == {"event_id", "kind"}


def test_types_follow_the_python_annotations():
    c = columns()
    assert c["timestamp"]["type"] == "TIMESTAMP" and c["occurred_at"]["type"] == "TIMESTAMP"
    assert c["llm_confidence"]["type"] == "FLOAT" and c["step_count"]["type"] == "INTEGER"
    assert c["execution_success"]["type"] == "BOOLEAN" and c["input_message"]["type"] == "STRING"
    assert c["context_degraded"] == {**c["context_degraded"], "type": "STRING", "mode": "REPEATED"}
    assert c["selected_tools"]["type"] == "RECORD" and c["selected_tools"]["mode"] == "REPEATED"
    assert {f["name"]: f["type"] for f in c["selected_tools"]["fields"]} == {
        "tool_name": "STRING",
        "parameters": "JSON",
    }
    assert c["usage"]["type"] == "RECORD" and c["usage"]["mode"] == "NULLABLE"
    assert c["proposal"]["type"] == "JSON" and c["timings"]["type"] == "JSON"
    assert c["execution_result"] == {**c["execution_result"], "type": "JSON", "mode": "NULLABLE"}


def test_every_column_is_described():
    def walk(cols):
        for col in cols:
            assert col.get("description"), col["name"]
            walk(col.get("fields", []))

    walk(bigquery_schema())


def test_the_table_partitions_and_clusters_on_columns_that_exist():
    tf = TABLE_TF.read_text(encoding="utf-8")
    partition = re.search(r'field\s*=\s*"(\w+)"', tf)
    clustering = re.search(r"clustering\s*=\s*\[([^\]]*)\]", tf)
    assert partition and clustering
    names = set(columns())
    assert partition.group(1) in names and columns()[partition.group(1)]["type"] == "TIMESTAMP"
    assert set(json.loads(f"[{clustering.group(1)}]")) <= names


def test_the_terraform_table_schema_file_is_the_generated_schema():
    # The file is owned by terraform; regenerate it with
    #   python -c "from shared_lib.ops.schema import bigquery_schema_json as s; print(s(), end='')" \
    #     > terraform/modules/bigquery/turn_events_schema.json
    assert TABLE_SCHEMA.read_text(encoding="utf-8") == bigquery_schema_json()
