# Secret Manager secrets: exactly the ids modules/run_services mounts (its local.service_secrets,
# passed in as var.secret_ids). Services read them through `value_source.secret_key_ref`; who may
# read which secret follows from the same map in modules/iam.
#
# Values: operators add versions of the provider credentials with `gcloud secrets versions add`
# (see terraform/README.md); Terraform never sees those. The one exception is the vault key
# (charter-vault-key, read as CHARTER_VAULT_KEY): nobody needs to know it, so Terraform generates
# it. Its value is therefore in the Terraform state: read access to the state bucket is read
# access to the key.

locals {
  vault_key_secret = "charter-vault-key"
}

resource "google_secret_manager_secret" "this" {
  for_each = var.secret_ids

  project   = var.project_id
  secret_id = each.key
  labels    = var.labels

  replication {
    auto {}
  }
}

# One 32-byte key per generation; generations are named in the environment's tfvars.
resource "random_bytes" "vault_key" {
  for_each = toset(var.vault_key_generations)

  length = 32
}

# A Fernet key is the URL-safe base64 of 32 bytes (padded). Several comma-separated keys are one
# MultiFernet: it encrypts with the first and decrypts with any of them. A changed generation list
# replaces the version (create before destroy, so "latest" always resolves); the replaced version
# is disabled, not destroyed.
resource "google_secret_manager_secret_version" "vault_key" {
  secret          = google_secret_manager_secret.this[local.vault_key_secret].id
  secret_data     = join(",", [for generation in var.vault_key_generations : replace(replace(random_bytes.vault_key[generation].base64, "+", "-"), "/", "_")])
  deletion_policy = "DISABLE"

  lifecycle {
    create_before_destroy = true
  }
}
