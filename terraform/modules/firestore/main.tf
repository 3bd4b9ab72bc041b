# The Firestore database (native mode), the composite indexes the product queries need, and TTL
# policies that let Firestore delete expired documents (claims, receipts, sessions, vaults, blobs,
# ...): one per collection group the catalogue of collections gives a TTL field (collections.tf).

locals {
  indexes = {
    # Observability records of one organisation, newest first (admin views, reports).
    observability_by_org = {
      collection = "observability"
      fields = [
        { field_path = "org_id", order = "ASCENDING" },
        { field_path = "occurred_at", order = "DESCENDING" },
      ]
    }
    # Every organisation's active goals, oldest first, a page at a time (the heartbeat's check-ins,
    # shared_lib.ops.due_tasks with shared_lib.state.paging).
    active_goals_by_created = {
      collection = "goals"
      fields = [
        { field_path = "status", order = "ASCENDING" },
        { field_path = "created_at", order = "ASCENDING" },
      ]
    }
    # Turns served by one brain arm over time (shadow and canary reports).
    turns_by_arm = {
      collection = "turns"
      fields = [
        { field_path = "arm", order = "ASCENDING" },
        { field_path = "occurred_at", order = "DESCENDING" },
      ]
    }
  }
}

resource "google_firestore_database" "this" {
  project     = var.project_id
  name        = "(default)"
  location_id = var.location
  type        = "FIRESTORE_NATIVE"

  point_in_time_recovery_enablement = var.point_in_time_recovery ? "POINT_IN_TIME_RECOVERY_ENABLED" : "POINT_IN_TIME_RECOVERY_DISABLED"
  delete_protection_state           = var.deletion_protection ? "DELETE_PROTECTION_ENABLED" : "DELETE_PROTECTION_DISABLED"
  # Removing the resource from Terraform never deletes the data.
  deletion_policy = "ABANDON"
}

resource "google_firestore_index" "this" {
  for_each = local.indexes

  project     = var.project_id
  database    = google_firestore_database.this.name
  collection  = each.value.collection
  query_scope = "COLLECTION_GROUP"

  dynamic "fields" {
    for_each = each.value.fields

    content {
      field_path = fields.value.field_path
      order      = fields.value.order
    }
  }
}

# The vector index of memory search (seed 001 §18): find_nearest over an organisation's
# memory_chunks (orgs/{org}/memory_chunks, a collection query: COLLECTION scope serves it under
# every organisation) after the one equality filter the search applies, model == the embedder's
# name, so vectors of two models are never compared. Flat (exhaustive) over the dimension of
# the Vertex AI model the cloud embeds with (text-multilingual-embedding-002: 768);
# tests/static/test_vector_index.py holds both to the code. Firestore stores a composite vector
# index with __name__ between the filter fields and the vector field: declared here as it is
# stored, so a plan after apply shows no change.
resource "google_firestore_index" "memory_chunks_vector" {
  project     = var.project_id
  database    = google_firestore_database.this.name
  collection  = "memory_chunks"
  query_scope = "COLLECTION"

  fields {
    field_path = "model"
    order      = "ASCENDING"
  }

  fields {
    field_path = "__name__"
    order      = "ASCENDING"
  }

  fields {
    field_path = "embedding"
    vector_config {
      dimension = 768
      flat {}
    }
  }
}

# Single-field indexes in collection-group scope, for the all-organisations reads of the
# dashboard: the roll-ups of a range of days (daily_stats.day) and the newest shadow
# comparisons of a window (shadow_comparisons.at), the newest Best-of-N runs (evaluations.at),
# the recently active conversations of every organisation (conversations.at), and the heartbeat's
# pages of waiting confirmations (approval_jobs.decide_by) and due tasks (heartbeat_tasks.next_due_at).
# Collection scope has them by default.
resource "google_firestore_field" "group_range" {
  for_each = {
    daily_stats        = { field = "day" }
    shadow_comparisons = { field = "at" }
    evaluations        = { field = "at" }
    conversations      = { field = "at" } # the organisations with recent conversations (POST /tasks/memory/<job>)
    # the heartbeat pages through every organisation's waiting confirmations and due periodic
    # tasks by these (shared_lib.ops.due_tasks, shared_lib.state.paging)
    approval_jobs   = { field = "decide_by" }
    heartbeat_tasks = { field = "next_due_at" }
  }

  project    = var.project_id
  database   = google_firestore_database.this.name
  collection = each.key
  field      = each.value.field

  index_config {
    indexes {
      order       = "ASCENDING"
      query_scope = "COLLECTION_GROUP"
    }
    indexes {
      order       = "DESCENDING"
      query_scope = "COLLECTION_GROUP"
    }
  }
}

resource "google_firestore_field" "ttl" {
  for_each = local.ttl_policies

  project    = var.project_id
  database   = google_firestore_database.this.name
  collection = each.key
  field      = each.value

  ttl_config {}

  # A monotonically growing timestamp is a write hotspot when indexed; nothing queries it.
  index_config {}
}
