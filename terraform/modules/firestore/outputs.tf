output "database_name" {
  description = "Firestore database name."
  value       = google_firestore_database.this.name
}

output "ttl_collection_groups" {
  description = "Collection groups with a TTL policy (from shared_lib/config/collections.json)."
  value       = sort(keys(local.ttl_policies))
}
