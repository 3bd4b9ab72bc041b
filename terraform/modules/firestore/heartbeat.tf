# The heartbeat's due tasks (shared_lib/ops/due_tasks.py) read, across organisations, the
# approval jobs still pending and the active goals: an equality on status in collection-group
# scope. A field's index_config replaces what it inherits, so the collection-scope indexes the
# per-organisation queries use (jobs.pending: status and room_id) are declared again.
resource "google_firestore_field" "heartbeat_status" {
  for_each = toset(["approval_jobs", "goals"])

  project    = var.project_id
  database   = google_firestore_database.this.name
  collection = each.key
  field      = "status"

  index_config {
    indexes {
      order       = "ASCENDING"
      query_scope = "COLLECTION_GROUP"
    }
    indexes {
      order       = "ASCENDING"
      query_scope = "COLLECTION"
    }
    indexes {
      order       = "DESCENDING"
      query_scope = "COLLECTION"
    }
  }
}
