variable "project_id" {
  description = "GCP project that holds the secrets."
  type        = string
}

variable "labels" {
  description = "Labels put on every secret."
  type        = map(string)
  default     = {}
}
