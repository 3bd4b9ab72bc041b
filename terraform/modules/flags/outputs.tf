output "document_path" {
  description = "Firestore path of the flag document (collection/document)."
  value       = "${google_firestore_document.flags.collection}/${google_firestore_document.flags.document_id}"
}

output "sha256" {
  description = "sha256 of the applied flags file."
  value       = sha256(local.flags_text)
}
