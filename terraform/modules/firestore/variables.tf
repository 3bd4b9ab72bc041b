variable "project_id" {
  description = "GCP project."
  type        = string
}

variable "location" {
  description = "Firestore location (a region such as asia-northeast1, or a multi-region such as nam5)."
  type        = string
}

variable "point_in_time_recovery" {
  description = "Keep 7 days of point-in-time recovery."
  type        = bool
  default     = false
}

variable "deletion_protection" {
  description = "Refuse to delete the database."
  type        = bool
  default     = true
}
