# The observability dataset fed by the Pub/Sub BigQuery subscription on the events topic
# (modules/pubsub). Dataset and table names come from topology.json; the schema from
# turn_events_schema.json beside this file (generated from the Python record schema).

locals {
  topology = jsondecode(file("${path.module}/../../../shared_lib/topology.json"))
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
