output "ingress_url" {
  description = "URL the chat providers' webhooks point at."
  value       = module.run_services.service_urls["ingress"]
}

output "admin_url" {
  description = "URL of the admin service (needs run.invoker and the operator token)."
  value       = module.run_services.service_urls["admin"]
}

output "service_urls" {
  description = "Target => Cloud Run service URL."
  value       = module.run_services.service_urls
}

output "candidate_urls" {
  description = "Target => URL of the candidate revision's tag."
  value       = module.run_services.candidate_urls
}

output "topic_names" {
  description = "Topic key => topic name."
  value       = module.pubsub.topic_names
}

output "subscription_names" {
  description = "Subscription names."
  value       = module.pubsub.subscription_names
}

output "service_account_emails" {
  description = "Target => service account email."
  value       = module.iam.service_account_emails
}

output "flags_sha256" {
  description = "sha256 of the applied flags file."
  value       = module.flags.sha256
}
