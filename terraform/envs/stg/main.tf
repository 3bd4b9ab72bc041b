# stg: Staging: production shape at low scale; every change rolls here first, shadow mode is rehearsed here.
# Everything is in modules/charter; this root only picks the values.

module "charter" {
  source = "../../modules/charter"

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
}
