# The one root of every environment: dev, stg and prod differ only in their tfvars file
# (<env>.tfvars) and their state (<env>.gcs.tfbackend). Everything is in modules/charter; this root
# validates the values and passes them on.
#
#   terraform init -reconfigure -backend-config=dev.gcs.tfbackend -backend-config="bucket=<state bucket>"
#   terraform plan -var-file=dev.tfvars -var project_id=<project> -var image=<image>

module "charter" {
  source = "../modules/charter"

  project_id               = var.project_id
  region                   = var.region
  env                      = var.env
  image                    = var.image
  candidate_tag            = var.candidate_tag
  candidate_percent        = var.candidate_percent
  stable_tag               = var.stable_tag
  service_sizing           = var.service_sizing
  firestore_location       = var.firestore_location
  firestore_pitr           = var.firestore_pitr
  bigquery_location        = var.bigquery_location
  daily_llm_budget_usd     = var.daily_llm_budget_usd
  notification_channel_ids = var.notification_channel_ids
  alert_email              = var.alert_email
  admin_invoker_members    = var.admin_invoker_members
  flags_file               = var.flags_file
  scheduler_time_zone      = var.scheduler_time_zone
  deletion_protection      = var.deletion_protection
  vault_key_generations    = var.vault_key_generations
}

# Environment guard. With one root, nothing but discipline ties a state to its tfvars file; so the
# state records which environment and project it holds. Planning another environment's tfvars (or
# another project) against this state would have to replace this resource, which prevent_destroy
# refuses: the plan fails before anything changes. Tearing an environment down on purpose starts
# with `terraform state rm terraform_data.environment`.
resource "terraform_data" "environment" {
  triggers_replace = {
    env        = var.env
    project_id = var.project_id
  }

  lifecycle {
    prevent_destroy = true
  }
}
