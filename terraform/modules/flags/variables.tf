variable "project_id" {
  description = "GCP project."
  type        = string
}

variable "database_name" {
  description = "Firestore database that holds config/flags."
  type        = string
}

variable "flags_file" {
  description = "Path of the flags JSON file; null means terraform/flags/flags.json (found from this module, whatever the root)."
  type        = string
  default     = null
}
