variable "project_id" {
  description = "GCP project that holds the secrets."
  type        = string
}

variable "secret_ids" {
  description = "Ids of the secrets to create: every secret id modules/run_services mounts."
  type        = set(string)

  validation {
    condition     = contains(var.secret_ids, local.vault_key_secret)
    error_message = "secret_ids must include charter-vault-key, whose value this module generates."
  }
}

variable "vault_key_generations" {
  description = "Names of the vault key generations: the first one's key encrypts, all decrypt (see terraform/README.md, rotation)."
  type        = list(string)

  validation {
    condition     = length(var.vault_key_generations) >= 1 && length(distinct(var.vault_key_generations)) == length(var.vault_key_generations)
    error_message = "vault_key_generations must name at least one generation, each once."
  }
}

variable "labels" {
  description = "Labels put on every secret."
  type        = map(string)
  default     = {}
}
