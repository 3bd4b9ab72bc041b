output "secret_ids" {
  description = "Secret name => full resource id (projects/P/secrets/NAME)."
  value       = { for name, secret in google_secret_manager_secret.this : name => secret.id }

  # Grants and services that use these ids wait for the generated vault key: a Cloud Run revision
  # whose secret has no version does not start.
  depends_on = [google_secret_manager_secret_version.vault_key]
}
