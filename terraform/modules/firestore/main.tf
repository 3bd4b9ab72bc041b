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

# Single-field indexes in collection-group scope, for the all-organisations reads of the
# dashboard: the roll-ups of a range of days (daily_stats.day) and the newest shadow
# comparisons of a window (shadow_comparisons.at), the newest Best-of-N runs (evaluations.at)
# and the recently active conversations of every organisation (conversations.at).
# Collection scope has them by default.
resource "google_firestore_field" "group_range" {
  for_each = {
    daily_stats        = { field = "day" }
    shadow_comparisons = { field = "at" }
    evaluations        = { field = "at" }
    conversations      = { field = "at" } # the organisations with recent conversations (POST /tasks/memory/<job>)
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
