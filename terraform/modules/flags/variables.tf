variable "project_id" {
  description = "GCP project."
  type        = string
}

variable "database_name" {
  description = "Firestore database that holds config/flags."
  type        = string
}

variable "flags_file" {
  description = "The environment's flags file, terraform/flags/<env>.json (relative to the root, terraform/envs: ../flags/<env>.json)."
  type        = string
  nullable    = false

  validation {
    condition     = can(regex("(^|/)flags/(dev|stg|prod)\\.json$", var.flags_file))
    error_message = "flags_file must be one environment's file, terraform/flags/<dev|stg|prod>.json."
  }
}
