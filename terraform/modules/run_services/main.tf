# One Cloud Run service per functions-framework target in topology.json, all from one image; the
# layer is picked at start-up by FUNCTION_TARGET / FUNCTION_SIGNATURE_TYPE (see the Dockerfile CMD).
#
# Rollout: every image is applied under a candidate tag (c-<short sha>). The revision is named
# <service>-<tag>, so Terraform, the smoke test and a rollback all name the same revision.
#   candidate_tag = ""                      -> 100 % to the latest revision (first bootstrap).
#   candidate_tag = T, candidate_percent = 0 -> new revision gets no traffic, reachable at its tag
#                                             URL; stable_tag's revision keeps 100 %.
#   candidate_tag = T, candidate_percent = 100 -> promoted.
# Revision names are immutable: any change of the service template needs a new candidate_tag.

locals {
  topology = jsondecode(file("${path.module}/../../../shared_lib/topology.json"))

  # Webhook providers cannot send Google identity tokens, so only ingress is open to allUsers.
  # The admin service is public at the network level but needs a Google identity with
  # run.invoker (the scheduler account or an operator through IAP / `gcloud run services proxy`)
  # AND the operator token it checks itself.
  unauthenticated_targets = toset(["ingress"])

  service_names = { for target in keys(local.topology.targets) : target => "charter-${replace(target, "_", "-")}" }

  # Sizing every target starts from; timeouts cover the Pub/Sub ack deadline (topology.json) so a
  # request is never cut before Pub/Sub gives up on it.
  base_sizing = {
    cpu             = "1"
    memory          = "512Mi"
    concurrency     = 40
    min_instances   = 0
    max_instances   = 10
    timeout_seconds = 60
  }

  layer_sizing = {
    ingress      = { concurrency = 80, max_instances = 20 } # verifies, dedupes, publishes: cheap
    context      = { memory = "1Gi" }                       # concurrent reads within a token budget
    brain        = { memory = "1Gi", concurrency = 20 }     # waits on the LLM
    brain_shadow = { memory = "1Gi", concurrency = 20, max_instances = 5 }
    responder    = { concurrency = 20 } # waits on the LLM and the channel APIs
    observer     = { concurrency = 80 }
    admin        = { max_instances = 2, timeout_seconds = 300 } # maintenance runs longer
  }

  sizing = {
    for target in keys(local.topology.targets) : target => merge(
      local.base_sizing,
      try(local.layer_sizing[target], {}),
      try({ for key, value in var.sizing[target] : key => value if value != null }, {}),
    )
  }

  candidate = var.candidate_tag != ""

  # Read by shared_lib.settings / shared_lib.logs: without CHARTER_STORE and CHARTER_BUS the
  # product would fall back to its in-memory adapters; CHARTER_LOG_JSON=1 makes the structured
  # log lines the log-based metrics of modules/monitoring read.
  base_env = {
    GOOGLE_CLOUD_PROJECT   = var.project_id
    CHARTER_PROJECT        = var.project_id
    CHARTER_ENV            = var.env
    CHARTER_STORE          = "firestore"
    CHARTER_BUS            = "pubsub"
    CHARTER_LOG_JSON       = "1"
    CHARTER_FLAGS_DOCUMENT = var.flags_document_path
  }
}

resource "google_cloud_run_v2_service" "this" {
  for_each = local.topology.targets

  project             = var.project_id
  name                = local.service_names[each.key]
  location            = var.region
  ingress             = each.value.public ? "INGRESS_TRAFFIC_ALL" : "INGRESS_TRAFFIC_INTERNAL_ONLY"
  deletion_protection = var.deletion_protection
  labels              = merge(var.labels, { "charter-target" = replace(each.key, "_", "-") })

  template {
    revision                         = local.candidate ? "${local.service_names[each.key]}-${var.candidate_tag}" : null
    service_account                  = var.service_account_emails[each.key]
    timeout                          = "${local.sizing[each.key].timeout_seconds}s"
    max_instance_request_concurrency = local.sizing[each.key].concurrency
    execution_environment            = "EXECUTION_ENVIRONMENT_GEN2"
    labels                           = var.labels

    scaling {
      min_instance_count = local.sizing[each.key].min_instances
      max_instance_count = local.sizing[each.key].max_instances
    }

    containers {
      image = var.image

      ports {
        container_port = 8080
      }

      resources {
        limits = {
          cpu    = local.sizing[each.key].cpu
          memory = local.sizing[each.key].memory
        }
        cpu_idle          = true
        startup_cpu_boost = true
      }

      env {
        name  = "FUNCTION_TARGET"
        value = each.key
      }

      env {
        name  = "FUNCTION_SIGNATURE_TYPE"
        value = each.value.kind
      }

      dynamic "env" {
        for_each = local.base_env

        content {
          name  = env.key
          value = env.value
        }
      }

      # Secrets are never plain values: each is read from Secret Manager at instance start.
      # The variable name is the secret name in upper snake case (anthropic-api-key -> ANTHROPIC_API_KEY).
      dynamic "env" {
        for_each = toset(lookup(var.secrets_by_target, each.key, []))

        content {
          name = upper(replace(env.value, "-", "_"))

          value_source {
            secret_key_ref {
              secret  = env.value
              version = "latest"
            }
          }
        }
      }
    }
  }

  dynamic "traffic" {
    for_each = local.candidate ? [] : [1]

    content {
      type    = "TRAFFIC_TARGET_ALLOCATION_TYPE_LATEST"
      percent = 100
    }
  }

  dynamic "traffic" {
    for_each = local.candidate ? [1] : []

    content {
      type     = "TRAFFIC_TARGET_ALLOCATION_TYPE_REVISION"
      revision = "${local.service_names[each.key]}-${var.candidate_tag}"
      tag      = var.candidate_tag
      percent  = var.candidate_percent
    }
  }

  dynamic "traffic" {
    for_each = local.candidate && var.candidate_percent < 100 ? [1] : []

    content {
      type     = "TRAFFIC_TARGET_ALLOCATION_TYPE_REVISION"
      revision = "${local.service_names[each.key]}-${var.stable_tag}"
      tag      = var.stable_tag
      percent  = 100 - var.candidate_percent
    }
  }

  lifecycle {
    precondition {
      condition     = !local.candidate || var.candidate_percent == 100 || (var.stable_tag != "" && var.stable_tag != var.candidate_tag)
      error_message = "A candidate below 100 % needs stable_tag: the tag of the revision that keeps the rest of the traffic."
    }

    precondition {
      condition     = local.sizing[each.key].timeout_seconds >= local.topology.retry.ack_deadline_seconds
      error_message = "The request timeout of ${each.key} is shorter than the Pub/Sub ack deadline in topology.json."
    }

    precondition {
      condition     = local.sizing[each.key].min_instances <= local.sizing[each.key].max_instances
      error_message = "min_instances of ${each.key} exceeds max_instances."
    }
  }
}

# Invokers. Internal targets: only the Pub/Sub push invoker.
resource "google_cloud_run_v2_service_iam_member" "pubsub_invoker" {
  for_each = { for target, spec in local.topology.targets : target => spec if !spec.public }

  project  = var.project_id
  location = var.region
  name     = google_cloud_run_v2_service.this[each.key].name
  role     = "roles/run.invoker"
  member   = "serviceAccount:${var.pubsub_invoker_email}"
}

resource "google_cloud_run_v2_service_iam_member" "public" {
  for_each = local.unauthenticated_targets

  project  = var.project_id
  location = var.region
  name     = google_cloud_run_v2_service.this[each.key].name
  role     = "roles/run.invoker"
  member   = "allUsers"
}

resource "google_cloud_run_v2_service_iam_member" "admin_scheduler" {
  project  = var.project_id
  location = var.region
  name     = google_cloud_run_v2_service.this["admin"].name
  role     = "roles/run.invoker"
  member   = "serviceAccount:${var.scheduler_email}"
}

resource "google_cloud_run_v2_service_iam_member" "admin_operators" {
  for_each = toset(var.admin_invoker_members)

  project  = var.project_id
  location = var.region
  name     = google_cloud_run_v2_service.this["admin"].name
  role     = "roles/run.invoker"
  member   = each.key
}
