# The observability dataset fed by the Pub/Sub BigQuery subscription on the events topic
# (modules/pubsub). Dataset and table names come from topology.json; the schema from
# turn_events_schema.json beside this file (generated from the Python record schema).

locals {
  topology = jsondecode(file("${path.module}/../../../shared_lib/delivery/topology.json"))
  bigquery = local.topology.bigquery
}

resource "google_bigquery_dataset" "observability" {
  project                    = var.project_id
  dataset_id                 = local.bigquery.dataset
  location                   = var.location
  description                = "Charter turn events, written by a Pub/Sub BigQuery subscription."
  labels                     = var.labels
  delete_contents_on_destroy = false

  default_partition_expiration_ms = var.retention_days * 86400000
}

resource "google_bigquery_table" "turn_events" {
  project             = var.project_id
  dataset_id          = google_bigquery_dataset.observability.dataset_id
  table_id            = local.bigquery.table
  description         = "One row per turn event (all layers)."
  labels              = var.labels
  deletion_protection = var.deletion_protection
  schema              = file("${path.module}/turn_events_schema.json")
  clustering          = ["org_id", "layer"]

  time_partitioning {
    type  = "DAY"
    field = "occurred_at"
  }
}

# The Pub/Sub service agent writes the rows and reads the table metadata.
resource "google_bigquery_table_iam_member" "agent_data_editor" {
  project    = var.project_id
  dataset_id = google_bigquery_table.turn_events.dataset_id
  table_id   = google_bigquery_table.turn_events.table_id
  role       = "roles/bigquery.dataEditor"
  member     = "serviceAccount:${var.pubsub_service_agent}"
}

resource "google_bigquery_dataset_iam_member" "agent_metadata_viewer" {
  project    = var.project_id
  dataset_id = google_bigquery_dataset.observability.dataset_id
  role       = "roles/bigquery.metadataViewer"
  member     = "serviceAccount:${var.pubsub_service_agent}"
}

# Multi-day views of the dashboard's numbers (the Firestore roll-ups keep a year of days per
# organisation; this reads any range): one row per organisation and calendar day of Asia/Tokyo,
# the flags' default cost day. Shadow candidates count apart; a turn redelivered to BigQuery
# (the subscription writes at least once) counts once, its last step.
resource "google_bigquery_table" "turn_daily" {
  project             = var.project_id
  dataset_id          = google_bigquery_dataset.observability.dataset_id
  table_id            = "turn_daily"
  description         = "Daily aggregates of turn_events per organisation (counts, rates, tokens, cost, LLM latency p95)."
  labels              = var.labels
  deletion_protection = false

  view {
    use_legacy_sql = false
    query          = <<-SQL
      WITH turns AS (
        SELECT * EXCEPT (rn) FROM (
          SELECT *, ROW_NUMBER() OVER (PARTITION BY kind, org_id, turn_id ORDER BY step DESC, recorded_at DESC) AS rn
          FROM `${var.project_id}.${google_bigquery_table.turn_events.dataset_id}.${google_bigquery_table.turn_events.table_id}`
          WHERE kind IN ('turn_record', 'shadow_candidate')
        ) WHERE rn = 1
      )
      SELECT
        DATE(timestamp, 'Asia/Tokyo') AS day,
        org_id,
        COUNTIF(kind = 'turn_record') AS turns,
        COUNTIF(kind = 'turn_record' AND arm = 'llm') AS llm_arm_turns,
        COUNTIF(kind = 'turn_record' AND arm = 'legacy') AS legacy_arm_turns,
        COUNTIF(kind = 'turn_record' AND guardian_action = 'confirm' AND output_type = 'tool_call') AS confirmations,
        COUNTIF(kind = 'turn_record' AND guardian_action = 'block') AS blocks,
        COUNTIF(kind = 'turn_record' AND auth_result = 'denied') AS denials,
        COUNTIF(kind = 'turn_record' AND ARRAY_LENGTH(errors) > 0) AS turns_with_errors,
        SUM(IF(kind = 'turn_record', tool_calls_executed, 0)) AS tool_calls,
        SUM(IF(kind = 'turn_record', tool_errors, 0)) AS tool_errors,
        AVG(IF(kind = 'turn_record', total_duration_ms, NULL)) AS avg_response_ms,
        APPROX_QUANTILES(IF(kind = 'turn_record' AND usage.llm_calls > 0, usage.llm_duration_ms / usage.llm_calls, NULL), 100)[OFFSET(95)] AS llm_latency_ms_p95,
        SUM(IF(kind = 'turn_record', usage.input_tokens, 0)) AS input_tokens,
        SUM(IF(kind = 'turn_record', usage.output_tokens, 0)) AS output_tokens,
        SUM(IF(kind = 'turn_record', usage.cache_read_input_tokens, 0)) AS cache_read_input_tokens,
        SUM(IF(kind = 'turn_record', usage.cache_creation_input_tokens, 0)) AS cache_creation_input_tokens,
        SUM(IF(kind = 'turn_record', cost_usd, 0)) AS cost_usd,
        COUNTIF(kind = 'shadow_candidate') AS shadow_candidates,
        SUM(IF(kind = 'shadow_candidate', cost_usd, 0)) AS shadow_cost_usd
      FROM turns
      GROUP BY day, org_id
    SQL
  }
}
