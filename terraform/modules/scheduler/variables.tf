variable "project_id" {
  description = "GCP project."
  type        = string
}

variable "region" {
  description = "Cloud Scheduler region."
  type        = string
}

variable "admin_url" {
  description = "URL of the admin Cloud Run service (also the OIDC audience)."
  type        = string
}

variable "scheduler_email" {
  description = "Service account the jobs authenticate as."
  type        = string
}

variable "time_zone" {
  description = "Time zone of the job schedules."
  type        = string
  default     = "Etc/UTC"
}
