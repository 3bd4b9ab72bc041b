# One Cloud Run service per functions-framework target in topology.json, all from one image; the
# layer is picked at start-up by FUNCTION_TARGET / FUNCTION_SIGNATURE_TYPE (see the Dockerfile CMD).
#
# What each service receives, in one place (the locals below, literal so tests can parse them):
#   local.common_env       plain env vars every service gets;
#   local.service_env      target => {NAME = value}: that target's own plain env vars (THREADS, ...);
#   local.service_secrets  target => {ENV_NAME = secret id}: env vars read from Secret Manager.
# A container's env is FUNCTION_TARGET, FUNCTION_SIGNATURE_TYPE, merge(common_env,
# service_env[target]) and service_secrets[target]; nothing else sets an env var. The secrets
# module creates exactly the secret ids of service_secrets and modules/iam grants each target
# secretAccessor on its own ids only (both through the service_secrets output).
#
# Rollout: every image is applied under a candidate tag (c-<short sha>). The revision is named
# <service>-<tag>, so Terraform, the smoke test and a rollback all name the same revision.
#   candidate_tag = ""                      -> 100 % to the latest revision (first bootstrap).
#   candidate_tag = T, candidate_percent = 0 -> new revision gets no traffic, reachable at its tag
#                                             URL; stable_tag's revision keeps 100 %.
#   candidate_tag = T, candidate_percent = 100 -> promoted; stable_tag's revision stays tagged at
#                                             0 %, so a revision rollback (charter rollout
#                                             rollback) finds the previous revision in the traffic.
# Revision names are immutable: any change of the service template needs a new candidate_tag.
# Before promotion every layer's candidate is smoke-tested: the smoke twins of the Pub/Sub
# subscriptions (modules/pubsub smoke.tf) push to candidate_tag_urls (outputs.tf), the tag URL
# https://<candidate_tag>---<service host> that reaches the candidate revision without traffic.

locals {
  topology = jsondecode(file("${path.module}/../../../shared_lib/delivery/topology.json"))

  # Webhook providers cannot send Google identity tokens, so only ingress is open to allUsers.
  # The admin service is public at the network level but needs a Google identity with
  # run.invoker (the scheduler account or an operator through IAP / `gcloud run services proxy`)
  # AND the operator token it checks itself.
  unauthenticated_targets = toset(["ingress"])

  service_names = { for target in keys(local.topology.targets) : target => "charter-${replace(target, "_", "-")}" }

  # Targets Pub/Sub pushes to; ingress and admin are plain HTTP services.
  push_targets = toset([for subscription in values(local.topology.subscriptions) : subscription.target])

  # Timeouts nest, innermost first: an LLM call with all its retries (CHARTER_LLM_RETRY_BUDGET)
  # < the Cloud Run request timeout < the Pub/Sub ack deadline (topology.json retry, 60 s). A push
  # must be answered (ack, or a nack by error or timeout) before the ack deadline: a request still
  # running then is delivered again, to a second instance, while the first is still working.
  # The preconditions below and tests/static check the nesting on the same numbers.
  llm_retry_budget_seconds = 40

  # Sizing every target starts from. timeout_seconds is the push timeout: 50 s < the ack deadline.
  base_sizing = {
    cpu             = "1"
    memory          = "512Mi"
    concurrency     = 40
    min_instances   = 0
    max_instances   = 10
    timeout_seconds = 50
  }

  layer_sizing = {
    ingress      = { concurrency = 80, max_instances = 20 } # verifies, dedupes, publishes: cheap
    context      = { memory = "1Gi" }                       # concurrent reads within a token budget
    brain        = { memory = "1Gi", concurrency = 20 }     # waits on the LLM
    brain_shadow = { memory = "1Gi", concurrency = 20, max_instances = 5 }
    responder    = { concurrency = 20 } # waits on the LLM and the channel APIs
    observer     = { concurrency = 80 }
    memory       = { concurrency = 10, max_instances = 3 }      # background summaries: waits on the LLM, never on a reply's path
    admin        = { max_instances = 2, timeout_seconds = 300 } # HTTP, not pushed: maintenance runs longer
  }

  sizing = {
    for target in keys(local.topology.targets) : target => merge(
      local.base_sizing,
      try(local.layer_sizing[target], {}),
      try({ for key, value in var.sizing[target] : key => value if value != null }, {}),
    )
  }

  candidate = var.candidate_tag != ""

  # Plain env vars of every service. Read by shared_lib.settings / shared_lib.observability.logs: without
  # CHARTER_STORE and CHARTER_BUS the product would fall back to its in-memory adapters;
  # CHARTER_LOG_JSON=1 makes the structured log lines the log-based metrics of modules/monitoring read;
  # CHARTER_TRACE_* export every turn's spans to Cloud Trace (the share of turns: var.trace_sample_ratio).
  common_env = {
    GOOGLE_CLOUD_PROJECT   = var.project_id
    CHARTER_PROJECT        = var.project_id
    CHARTER_ENV            = var.env
    CHARTER_STORE          = "firestore"
    CHARTER_BUS            = "pubsub"
    CHARTER_LOG_JSON       = "1"
    CHARTER_FLAGS_DOCUMENT = var.flags_document_path
    # one trace per turn, every hop (shared_lib.tracing); the accounts hold roles/cloudtrace.agent
    CHARTER_TRACE_EXPORTER     = "cloud_trace"
    CHARTER_TRACE_SAMPLE_RATIO = tostring(var.trace_sample_ratio)
    # the persona core's pin (shared_lib.persona.catalogue.verify_persona, checked at start); empty: the
    # pin of the persona file. A company shipping its own core sets its hash here.
    CHARTER_PERSONA_CORE_SHA256 = var.persona_core_sha256
  }

  # The LLM peers of the services that call the model (shared_lib.peers, CHARTER_PEERS): the
  # Anthropic API first, Claude on Vertex AI second (its credentials: the service account, ADC),
  # every purpose in that order; each peer probed every CHARTER_PEER_HEALTH_SECONDS by one instance.
  # tests/static/test_peers_terraform.py parses it with PeersConfig.
  peers_json = <<-EOT
    {
      "description": "Terraform (modules/run_services): the Anthropic API, then Claude on Vertex AI.",
      "peers": [
        {"name": "anthropic", "kind": "anthropic", "local": false, "api_key_setting": "anthropic_api_key"},
        {"name": "vertex", "kind": "vertex", "local": false, "project": "${var.project_id}", "region": "${var.vertex_region}"}
      ],
      "routing": {}
    }
  EOT

  # Each target's own plain env vars, merged over common_env.
  # CHARTER_EMBEDDER: memory search embeds with Vertex AI text embeddings (modules/iam grants
  # roles/aiplatform.user); the vectors live in Firestore behind the vector index of modules/firestore.
  # THREADS: functions-framework runs one gunicorn worker with THREADS threads; it must equal the
  # Cloud Run concurrency, or requests queue inside the instance (fewer threads) or an instance
  # takes more requests than it was sized for (more threads).
  # CHARTER_TASK_BACKEND: tasks live in ChatWork; the executor writes them and context lists them
  # for the prompt, so both use the same backend (with CHATWORK_API_TOKEN below).
  service_env = {
    ingress = {
      THREADS = tostring(local.sizing.ingress.concurrency)
    }
    # context classifies what no routing rule decides (seed 003) with the fast model
    context = {
      THREADS                     = tostring(local.sizing.context.concurrency)
      CHARTER_TASK_BACKEND        = "chatwork"
      CHARTER_EMBEDDER            = "vertex"
      CHARTER_LLM_RETRY_BUDGET    = tostring(local.llm_retry_budget_seconds)
      CHARTER_PEERS               = local.peers_json
      CHARTER_PEER_HEALTH_SECONDS = "30"
    }
    brain = {
      THREADS                     = tostring(local.sizing.brain.concurrency)
      CHARTER_LLM_RETRY_BUDGET    = tostring(local.llm_retry_budget_seconds)
      CHARTER_PEERS               = local.peers_json
      CHARTER_PEER_HEALTH_SECONDS = "30"
    }
    brain_shadow = {
      THREADS                     = tostring(local.sizing.brain_shadow.concurrency)
      CHARTER_LLM_RETRY_BUDGET    = tostring(local.llm_retry_budget_seconds)
      CHARTER_PEERS               = local.peers_json
      CHARTER_PEER_HEALTH_SECONDS = "30"
    }
    guardian = {
      THREADS = tostring(local.sizing.guardian.concurrency)
    }
    authorizer = {
      THREADS = tostring(local.sizing.authorizer.concurrency)
    }
    executor = {
      THREADS              = tostring(local.sizing.executor.concurrency)
      CHARTER_TASK_BACKEND = "chatwork"
      CHARTER_EMBEDDER     = "vertex"
    }
    responder = {
      THREADS                     = tostring(local.sizing.responder.concurrency)
      CHARTER_LLM_RETRY_BUDGET    = tostring(local.llm_retry_budget_seconds)
      CHARTER_PEERS               = local.peers_json
      CHARTER_PEER_HEALTH_SECONDS = "30"
    }
    observer = {
      THREADS = tostring(local.sizing.observer.concurrency)
    }
    memory = {
      THREADS                     = tostring(local.sizing.memory.concurrency)
      CHARTER_LLM_RETRY_BUDGET    = tostring(local.llm_retry_budget_seconds)
      CHARTER_PEERS               = local.peers_json
      CHARTER_PEER_HEALTH_SECONDS = "30"
      CHARTER_EMBEDDER            = "vertex"
    }
    admin = {
      THREADS          = tostring(local.sizing.admin.concurrency)
      CHARTER_EMBEDDER = "vertex"
      # the heartbeat's peer health self-check names each configured peer (reads peer_health only)
      CHARTER_PEERS = local.peers_json
      # /tasks/* checks the scheduler's OIDC identity in the app too (shared_lib.admin.identity)
      CHARTER_SCHEDULER_SA = var.scheduler_email
    }
  }

  # Env var name => Secret Manager secret id, per target. The names are the ones the product
  # reads (shared_lib.channels.secrets, shared_lib.brain.vault, shared_lib.tools.task_backend,
  # shared_lib.runtime). No operator token: operators act by identity (shared_lib.admin.identity:
  # their credentials live hashed in Firestore, or their Google identity). brain_shadow runs the candidate
  # arm, which calls the same LLM and masks into the same vault as brain. ingress and context hold
  # the vault key for the debounce buffer's texts (shared_lib.features.debounce.state); ingress
  # seals and admin opens the turns a paused intake holds (shared_lib.delivery.intake).
  service_secrets = {
    ingress = {
      CHATWORK_WEBHOOK_TOKEN = "chatwork-webhook-token"
      LINE_CHANNEL_SECRET    = "line-channel-secret"
      SLACK_SIGNING_SECRET   = "slack-signing-secret"
      HTTP_WEBHOOK_SECRET    = "http-webhook-secret"
      HTTP_WEBHOOK_TENANTS   = "http-webhook-tenants"
      CHARTER_VAULT_KEY      = "charter-vault-key"
    }
    context = {
      ANTHROPIC_API_KEY  = "anthropic-api-key"
      CHARTER_VAULT_KEY  = "charter-vault-key"
      CHATWORK_API_TOKEN = "chatwork-api-token"
    }
    brain = {
      ANTHROPIC_API_KEY = "anthropic-api-key"
      CHARTER_VAULT_KEY = "charter-vault-key"
    }
    brain_shadow = {
      ANTHROPIC_API_KEY = "anthropic-api-key"
      CHARTER_VAULT_KEY = "charter-vault-key"
    }
    guardian   = {}
    authorizer = {}
    executor = {
      CHATWORK_API_TOKEN = "chatwork-api-token"
      CHARTER_VAULT_KEY  = "charter-vault-key"
    }
    responder = {
      ANTHROPIC_API_KEY         = "anthropic-api-key"
      CHATWORK_API_TOKEN        = "chatwork-api-token"
      LINE_CHANNEL_ACCESS_TOKEN = "line-channel-access-token"
      SLACK_BOT_TOKEN           = "slack-bot-token"
      HTTP_WEBHOOK_SECRET       = "http-webhook-secret"  # signs replies of the plain-HTTP channel
      HTTP_WEBHOOK_TENANTS      = "http-webhook-tenants" # ... with the organisation's own secret
    }
    # observer and admin deliver alerts, to a ChatWork room among others (CHARTER_ALERT_ROOM), and
    # sign the alert webhook's body with CHARTER_ALERT_WEBHOOK_SECRET (shared_lib.telemetry.notify)
    observer = {
      CHATWORK_API_TOKEN           = "chatwork-api-token"
      CHARTER_ALERT_WEBHOOK_SECRET = "alert-webhook-secret"
    }
    # memory summarises conversations (seed 001 §19) with the fast model
    memory = {
      ANTHROPIC_API_KEY = "anthropic-api-key"
    }
    admin = {
      CHATWORK_API_TOKEN           = "chatwork-api-token"
      CHARTER_ALERT_WEBHOOK_SECRET = "alert-webhook-secret"
      CHARTER_VAULT_KEY            = "charter-vault-key"
    }
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
        for_each = merge(local.common_env, local.service_env[each.key])

        content {
          name  = env.key
          value = env.value
        }
      }

      # Secrets are never plain values: each is read from Secret Manager at instance start.
      dynamic "env" {
        for_each = local.service_secrets[each.key]

        content {
          name = env.key

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

  # The revision that served before: the rest of the traffic while the candidate is below 100 %,
  # then 0 % with its tag kept, as the target of a revision rollback.
  dynamic "traffic" {
    for_each = local.candidate && var.stable_tag != "" && var.stable_tag != var.candidate_tag ? [1] : []

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
      condition     = !contains(local.push_targets, each.key) || local.sizing[each.key].timeout_seconds < local.topology.retry.ack_deadline_seconds
      error_message = "The request timeout of ${each.key} must be below the Pub/Sub ack deadline in topology.json: a push still running at the deadline is delivered again."
    }

    precondition {
      condition     = try(tonumber(local.service_env[each.key].CHARTER_LLM_RETRY_BUDGET), 0) < local.sizing[each.key].timeout_seconds
      error_message = "The LLM retry budget (CHARTER_LLM_RETRY_BUDGET) of ${each.key} must end before its request timeout."
    }

    precondition {
      condition     = tonumber(local.service_env[each.key].THREADS) == local.sizing[each.key].concurrency
      error_message = "THREADS of ${each.key} must equal its Cloud Run concurrency."
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
