variable "project_id" {
  description = "GCP project."
  type        = string
}

variable "service_urls" {
  description = "Target => Cloud Run service URL, from modules/run_services (push endpoints)."
  type        = map(string)
}

variable "candidate_urls" {
  description = "Target => tag URL of the candidate revision (modules/run_services candidate_tag_urls): push endpoints of the smoke twins."
  type        = map(string)
}

variable "invoker_service_account_email" {
  description = "Service account whose OIDC token every push subscription sends."
  type        = string
}

variable "pubsub_service_agent" {
  description = "Email of the Pub/Sub service agent, service-PROJECT_NUMBER@gcp-sa-pubsub.iam.gserviceaccount.com."
  type        = string

  validation {
    condition     = can(regex("^service-[0-9]+@gcp-sa-pubsub\\.iam\\.gserviceaccount\\.com$", var.pubsub_service_agent))
    error_message = "pubsub_service_agent must be service-PROJECT_NUMBER@gcp-sa-pubsub.iam.gserviceaccount.com."
  }
}

variable "bigquery_table" {
  description = "PROJECT.DATASET.TABLE the BigQuery subscription writes to, from modules/bigquery."
  type        = string
}

variable "labels" {
  description = "Labels put on topics and subscriptions."
  type        = map(string)
  default     = {}
}
