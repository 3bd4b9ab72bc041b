variable "project_id" {
  description = "GCP project."
  type        = string
}

variable "location" {
  description = "BigQuery location of the dataset (a region or a multi-region such as US)."
  type        = string
}

variable "retention_days" {
  description = "Days a partition of turn events is kept."
  type        = number
  default     = 400
}

variable "deletion_protection" {
  description = "Refuse to destroy the table."
  type        = bool
  default     = true
}

variable "pubsub_service_agent" {
  description = "Email of the Pub/Sub service agent."
  type        = string
}

variable "labels" {
  description = "Labels put on the dataset and table."
  type        = map(string)
  default     = {}
}
