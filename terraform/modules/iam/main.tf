# One service account per functions-framework target, plus two callers: the Pub/Sub push
# invoker and the Cloud Scheduler caller. Every grant here is resource-scoped except Firestore
# (roles/datastore.user has no narrower scope than the project).

locals {
  topology = jsondecode(file("${path.module}/../../../shared_lib/delivery/topology.json"))

  # Which topics each target may publish to (keys of topology.json "topics").
  # This is security policy, not wiring, so it lives here rather than in topology.json;
  # tests/static asserts it against topology.json and against the design of DESIGN.md §3:
  #   ingress -> received; context -> contextualized, and completed for a turn the debounce
  #   absorbed into a later one (seed 001 §7.3); brain -> proposed; guardian -> guarded;
  #   authorizer -> authorized; executor -> executed; responder -> completed, and contextualized
  #   for the multi-step loop; brain_shadow -> shadow; every layer also -> events. memory (the
  #   background memory target) -> events; admin -> memory (POST /tasks/memory/<job>: the jobs)
  #   and received (Resume publishes the turns the Pause held, shared_lib.delivery.intake).
  # The observer consumes events and publishes nothing (a grant would allow a feedback loop).
  # Nobody publishes to deadletter: only the Pub/Sub service agent does (modules/pubsub).
  publishes = {
    ingress      = ["received", "events"]
    context      = ["contextualized", "completed", "events"]
    brain        = ["proposed", "events"]
    brain_shadow = ["shadow", "events"]
    guardian     = ["guarded", "events"]
    authorizer   = ["authorized", "events"]
    executor     = ["executed", "events"]
    responder    = ["completed", "contextualized", "events"]
    observer     = []
    memory       = ["events"]
    admin        = ["events", "memory", "received"]
  }

  # A smoke turn (topology.json "smoke") travels the twins of the topics: each target may also
  # publish to the twins of its own topics (keys smoke.<key>, modules/pubsub smoke.tf), nothing more.
  smoke_publishes = {
    for target, topics in local.publishes : target => [
      for topic in topics : "${local.topology.smoke.topic_prefix}${topic}" if contains(local.topology.smoke.topics, topic)
    ]
  }

  publisher_grants = merge([
    for target, topics in local.publishes : {
      for topic in concat(topics, local.smoke_publishes[target]) : "${target}/${topic}" => { target = target, topic = topic }
    }
  ]...)

  # Each target reads exactly the secrets its Cloud Run service mounts (modules/run_services
  # local.service_secrets, the one place that says which env var comes from which secret).
  secret_grants = merge([
    for target, secrets in var.service_secrets : {
      for secret in distinct(values(secrets)) : "${target}/${secret}" => { target = target, secret = secret }
    }
  ]...)
}

resource "google_service_account" "target" {
  for_each = local.topology.targets

  project      = var.project_id
  account_id   = "charter-${replace(each.key, "_", "-")}"
  display_name = "Charter ${each.key} (${each.value.kind})"
  description  = "Runs the ${each.key} functions-framework target. Managed by Terraform."
}

resource "google_service_account" "pubsub_invoker" {
  project      = var.project_id
  account_id   = "charter-pubsub-invoker"
  display_name = "Charter Pub/Sub push invoker"
  description  = "Identity in the OIDC token of every push subscription; may only invoke the internal services."
}

resource "google_service_account" "scheduler" {
  project      = var.project_id
  account_id   = "charter-scheduler"
  display_name = "Charter Cloud Scheduler caller"
  description  = "Identity in the OIDC token of the scheduler jobs; may only invoke the admin service."
}

# Session state, idempotency claims, receipts and records all live in Firestore.
resource "google_project_iam_member" "datastore_user" {
  for_each = local.topology.targets

  project = var.project_id
  role    = "roles/datastore.user"
  member  = google_service_account.target[each.key].member
}

# Every service exports its spans of a turn to Cloud Trace (shared_lib.tracing, CHARTER_TRACE_EXPORTER).
resource "google_project_iam_member" "cloudtrace_agent" {
  for_each = local.topology.targets

  project = var.project_id
  role    = "roles/cloudtrace.agent"
  member  = google_service_account.target[each.key].member
}

resource "google_pubsub_topic_iam_member" "publisher" {
  for_each = local.publisher_grants

  project = var.project_id
  topic   = var.topic_names[each.value.topic]
  role    = "roles/pubsub.publisher"
  member  = google_service_account.target[each.value.target].member
}

resource "google_secret_manager_secret_iam_member" "accessor" {
  for_each = local.secret_grants

  project   = var.project_id
  secret_id = var.secret_ids[each.value.secret]
  role      = "roles/secretmanager.secretAccessor"
  member    = google_service_account.target[each.value.target].member
}

# Claude on Vertex AI (the LLM peers of modules/run_services, CHARTER_PEERS) and Vertex AI text
# embeddings (memory search, CHARTER_EMBEDDER) are called with the service's own identity.
# tests/static/test_terraform_policy.py holds this list to the settings' LLM and embedding targets.
locals {
  vertex_targets = ["brain", "brain_shadow", "responder", "memory", "context", "executor", "admin"]
}

resource "google_project_iam_member" "vertex_user" {
  for_each = toset(local.vertex_targets)

  project = var.project_id
  role    = "roles/aiplatform.user"
  member  = google_service_account.target[each.key].member
}
