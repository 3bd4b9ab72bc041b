# Validation of these values lives in the root (terraform/envs/variables.tf), which is what
# operators and the pipeline call.

variable "project_id" {
  description = "GCP project of this environment."
  type        = string
}

variable "region" {
  description = "Region of Cloud Run and Cloud Scheduler."
  type        = string
}

variable "env" {
  description = "Environment name: dev, stg or prod."
  type        = string
}

variable "image" {
  description = "Container image (pinned by tag or digest) every service runs."
  type        = string
}

variable "candidate_tag" {
  description = "Traffic tag of the revision built from image (c-<short sha>); empty = latest revision, no tag."
  type        = string
  default     = ""
}

variable "candidate_percent" {
  description = "Percent of traffic for the candidate revision."
  type        = number
  default     = 100
}

variable "stable_tag" {
  description = "Tag of the revision that keeps the rest of the traffic while candidate_percent < 100."
  type        = string
  default     = ""
}

variable "service_sizing" {
  description = "Per-target sizing overrides (see modules/run_services)."
  type = map(object({
    cpu             = optional(string)
    memory          = optional(string)
    concurrency     = optional(number)
    min_instances   = optional(number)
    max_instances   = optional(number)
    timeout_seconds = optional(number)
  }))
  default = {}
}

variable "firestore_location" {
  description = "Firestore location."
  type        = string
}

variable "firestore_pitr" {
  description = "Enable Firestore point-in-time recovery."
  type        = bool
  default     = false
}

variable "bigquery_location" {
  description = "BigQuery dataset location."
  type        = string
}

variable "bigquery_retention_days" {
  description = "Days a partition of turn events is kept."
  type        = number
  default     = 400
}

variable "daily_llm_budget_usd" {
  description = "Daily LLM cost that raises an alert."
  type        = number
}

variable "notification_channel_ids" {
  description = "Existing notification channel ids for alerts."
  type        = list(string)
  default     = []
}

variable "alert_email" {
  description = "Optional email address that gets its own notification channel."
  type        = string
  default     = ""
}

variable "admin_invoker_members" {
  description = "Operator principals allowed to invoke the admin service."
  type        = list(string)
  default     = []
}

variable "flags_file" {
  description = "Path of the environment's flags JSON file (terraform/flags/<env>.json)."
  type        = string
  default     = null
}

variable "scheduler_time_zone" {
  description = "Time zone of the scheduler jobs."
  type        = string
  default     = "Etc/UTC"
}

variable "deletion_protection" {
  description = "Protect Cloud Run services, the Firestore database and the BigQuery table from deletion."
  type        = bool
  default     = true
}

variable "vault_key_generations" {
  description = "Generations of the generated vault key (charter-vault-key); the first one's key encrypts."
  type        = list(string)
}

variable "labels" {
  description = "Extra labels for labelled resources."
  type        = map(string)
  default     = {}
}
