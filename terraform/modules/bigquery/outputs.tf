output "table" {
  description = "PROJECT.DATASET.TABLE for the Pub/Sub BigQuery subscription."
  value       = "${google_bigquery_table.turn_events.project}.${google_bigquery_table.turn_events.dataset_id}.${google_bigquery_table.turn_events.table_id}"

  # The subscription is rejected until the service agent may write to the table.
  depends_on = [
    google_bigquery_table_iam_member.agent_data_editor,
    google_bigquery_dataset_iam_member.agent_metadata_viewer,
  ]
}

output "dataset_id" {
  description = "Dataset id."
  value       = google_bigquery_dataset.observability.dataset_id
}

output "turn_daily_view" {
  description = "The daily-aggregate view over turn_events (multi-day dashboard ranges)."
  value       = "${var.project_id}.${google_bigquery_table.turn_daily.dataset_id}.${google_bigquery_table.turn_daily.table_id}"
}
