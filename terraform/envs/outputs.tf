output "ingress_url" {
  description = "URL the chat providers' webhooks point at."
  value       = module.charter.ingress_url
}

output "admin_url" {
  description = "URL of the admin service (run.invoker plus the operator token)."
  value       = module.charter.admin_url
}

output "topic_names" {
  description = "Topic key => Pub/Sub topic name."
  value       = module.charter.topic_names
}

output "subscription_names" {
  description = "Pub/Sub subscription names."
  value       = module.charter.subscription_names
}

output "service_urls" {
  description = "Target => Cloud Run service URL."
  value       = module.charter.service_urls
}

output "candidate_urls" {
  description = "Target => tag URL of the candidate revision (smoke test target)."
  value       = module.charter.candidate_urls
}

output "flags_sha256" {
  description = "sha256 of the applied flags file."
  value       = module.charter.flags_sha256
}

output "rollout" {
  description = "The rollout variables of this apply, as a tfvars JSON object (the pipeline feeds it back with -var-file)."
  value = {
    image             = var.image
    candidate_tag     = var.candidate_tag
    candidate_percent = var.candidate_percent
    stable_tag        = var.stable_tag
  }
}

output "serving_tag" {
  description = "Tag of the revision that serves (most of) the traffic; the next rollout's stable_tag."
  value       = var.candidate_tag == "" ? "" : (var.candidate_percent == 100 ? var.candidate_tag : var.stable_tag)
}
