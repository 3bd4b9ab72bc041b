# Secret Manager secrets, created empty. Terraform never holds a secret value: operators add
# versions with `gcloud secrets versions add` (see terraform/README.md), and services read them
# through `value_source.secret_key_ref`. Who may read which secret is decided in modules/iam.

locals {
  secret_ids = toset([
    "anthropic-api-key",
    "chatwork-webhook-token",
    "chatwork-api-token",
    "line-channel-secret",
    "line-channel-access-token",
    "slack-signing-secret",
    "slack-bot-token",
    "http-webhook-secret",
    "admin-operator-token",
  ])
}

resource "google_secret_manager_secret" "this" {
  for_each = local.secret_ids

  project   = var.project_id
  secret_id = each.key
  labels    = var.labels

  replication {
    auto {}
  }
}
