output "service_names" {
  description = "Target => Cloud Run service name."
  value       = { for target, service in google_cloud_run_v2_service.this : target => service.name }
}

output "service_urls" {
  description = "Target => service URL."
  value       = { for target, service in google_cloud_run_v2_service.this : target => service.uri }
}

output "candidate_urls" {
  description = "Target => URL of the candidate revision's tag (null without a candidate)."
  value = {
    for target, service in google_cloud_run_v2_service.this : target => try(
      [for status in service.traffic_statuses : status.uri if status.tag == var.candidate_tag][0], null
    )
  }
}

output "candidate_tag_urls" {
  description = "Target => https://<candidate_tag>---<service host>: the candidate revision's tag URL, computed from the tag (known before the revision serves; the smoke twins push here). The service URL without a candidate tag."
  value = {
    for target, service in google_cloud_run_v2_service.this : target => (
      local.candidate ? "https://${var.candidate_tag}---${trimprefix(service.uri, "https://")}" : service.uri
    )
  }
}

output "sizing" {
  description = "Effective sizing per target."
  value       = local.sizing
}

output "service_secrets" {
  description = "Target => {env var name => secret id} each service mounts; modules/secrets creates these ids and modules/iam grants each target access to its own."
  value       = local.service_secrets
}
