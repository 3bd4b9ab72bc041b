# The heartbeat's due tasks (shared_lib/ops/due_tasks.py) read, across organisations, the
# approval jobs that can still be answered (decide_by after now) and the active goals (status);
# the jobs watchdog (shared_lib/features/jobs/steps.py) and `charter jobs list` the delegated jobs
# by status, and the heartbeat's periodic tasks (shared_lib/features/heartbeat_tasks) the tasks
# come due (next_due_at) and the runs whose turn is yet to be published (published): one field
# each in collection-group scope. A field's index_config replaces what it inherits,
# so the field's collection-scope indexes (the per-organisation queries) are declared again.
resource "google_firestore_field" "heartbeat" {
  for_each = {
    approval_jobs   = "decide_by",
    goals           = "status",
    agent_jobs      = "status",
    heartbeat_tasks = "next_due_at",
    heartbeat_runs  = "published",
  }

  project    = var.project_id
  database   = google_firestore_database.this.name
  collection = each.key
  field      = each.value

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

# The jobs watchdog also reads, across organisations, the delegated jobs whose report is still
# due (report_pending == true: its send failed or its turn died) to send it once.
resource "google_firestore_field" "job_reports" {
  project    = var.project_id
  database   = google_firestore_database.this.name
  collection = "agent_jobs"
  field      = "report_pending"

  index_config {
    indexes {
      order       = "ASCENDING"
      query_scope = "COLLECTION_GROUP"
    }
    indexes {
      order       = "ASCENDING"
      query_scope = "COLLECTION"
    }
  }
}
