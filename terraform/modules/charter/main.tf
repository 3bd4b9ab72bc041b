# The whole Charter deployment of one environment (one GCP project per environment: topic and
# subscription names are the ones in shared_lib/delivery/topology.json, the same in every project).
# The one root, terraform/envs, only chooses values for this module (per environment, from its tfvars).

data "google_project" "this" {
  project_id = var.project_id
}

locals {
  pubsub_service_agent = "service-${data.google_project.this.number}@gcp-sa-pubsub.iam.gserviceaccount.com"

  # Every secret id some service mounts (modules/run_services local.service_secrets).
  secret_ids = toset(flatten([for secrets in values(module.run_services.service_secrets) : values(secrets)]))

  labels = merge(var.labels, { app = "charter", env = var.env, managed-by = "terraform" })

  apis = toset([
    "bigquery.googleapis.com",
    "cloudscheduler.googleapis.com",
    "firestore.googleapis.com",
    "iam.googleapis.com",
    "iamcredentials.googleapis.com",
    "logging.googleapis.com",
    "monitoring.googleapis.com",
    "pubsub.googleapis.com",
    "run.googleapis.com",
    "secretmanager.googleapis.com",
  ])
}

resource "google_project_service" "this" {
  for_each = local.apis

  project = var.project_id
  service = each.key
  # Other workloads in the project may use the same APIs.
  disable_on_destroy = false
}

module "secrets" {
  source = "../secrets"

  project_id            = var.project_id
  secret_ids            = local.secret_ids
  vault_key_generations = var.vault_key_generations
  labels                = local.labels

  depends_on = [google_project_service.this]
}

module "firestore" {
  source = "../firestore"

  project_id             = var.project_id
  location               = var.firestore_location
  point_in_time_recovery = var.firestore_pitr
  deletion_protection    = var.deletion_protection

  depends_on = [google_project_service.this]
}

module "flags" {
  source = "../flags"

  project_id    = var.project_id
  database_name = module.firestore.database_name
  flags_file    = var.flags_file
}

module "bigquery" {
  source = "../bigquery"

  project_id           = var.project_id
  location             = var.bigquery_location
  retention_days       = var.bigquery_retention_days
  deletion_protection  = var.deletion_protection
  pubsub_service_agent = local.pubsub_service_agent
  labels               = local.labels

  depends_on = [google_project_service.this]
}

module "iam" {
  source = "../iam"

  project_id      = var.project_id
  topic_names     = module.pubsub.topic_names
  secret_ids      = module.secrets.secret_ids
  service_secrets = module.run_services.service_secrets

  depends_on = [google_project_service.this]
}

module "run_services" {
  source = "../run_services"

  project_id             = var.project_id
  region                 = var.region
  env                    = var.env
  image                  = var.image
  candidate_tag          = var.candidate_tag
  candidate_percent      = var.candidate_percent
  stable_tag             = var.stable_tag
  sizing                 = var.service_sizing
  service_account_emails = module.iam.service_account_emails
  flags_document_path    = module.flags.document_path
  pubsub_invoker_email   = module.iam.pubsub_invoker_email
  scheduler_email        = module.iam.scheduler_email
  admin_invoker_members  = var.admin_invoker_members
  deletion_protection    = var.deletion_protection
  labels                 = local.labels

  depends_on = [google_project_service.this]
}

module "pubsub" {
  source = "../pubsub"

  project_id                    = var.project_id
  service_urls                  = module.run_services.service_urls
  candidate_urls                = module.run_services.candidate_tag_urls
  invoker_service_account_email = module.iam.pubsub_invoker_email
  pubsub_service_agent          = local.pubsub_service_agent
  bigquery_table                = module.bigquery.table
  labels                        = local.labels

  depends_on = [google_project_service.this]
}

module "scheduler" {
  source = "../scheduler"

  project_id      = var.project_id
  region          = var.region
  admin_url       = module.run_services.service_urls["admin"]
  scheduler_email = module.iam.scheduler_email
  time_zone       = var.scheduler_time_zone

  depends_on = [google_project_service.this]
}

module "monitoring" {
  source = "../monitoring"

  project_id               = var.project_id
  env                      = var.env
  ingress_service_name     = module.run_services.service_names["ingress"]
  daily_cost_budget_usd    = var.daily_llm_budget_usd
  notification_channel_ids = var.notification_channel_ids
  alert_email              = var.alert_email

  depends_on = [google_project_service.this]
}
