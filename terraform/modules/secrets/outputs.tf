output "secret_ids" {
  description = "Secret name => full resource id (projects/P/secrets/NAME)."
  value       = { for name, secret in google_secret_manager_secret.this : name => secret.id }
}
