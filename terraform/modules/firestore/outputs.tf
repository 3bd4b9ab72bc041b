output "database_name" {
  description = "Firestore database name."
  value       = google_firestore_database.this.name
}

output "ttl_collection_groups" {
  description = "Collection groups with a TTL policy on expires_at."
  value       = sort(tolist(local.ttl_collection_groups))
}
