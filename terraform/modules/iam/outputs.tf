output "service_account_emails" {
  description = "Target => the email of its own service account."
  value       = { for target, sa in google_service_account.target : target => sa.email }

  # A Cloud Run revision is rejected if its identity cannot read the secrets it mounts, so
  # consumers of these emails wait for the grants.
  depends_on = [
    google_secret_manager_secret_iam_member.accessor,
    google_project_iam_member.datastore_user,
  ]
}

output "pubsub_invoker_email" {
  description = "Service account in the OIDC token of every push subscription."
  value       = google_service_account.pubsub_invoker.email
}

output "scheduler_email" {
  description = "Service account in the OIDC token of the Cloud Scheduler jobs."
  value       = google_service_account.scheduler.email
}

output "publishes" {
  description = "Target => topic keys it may publish to."
  value       = local.publishes
}
