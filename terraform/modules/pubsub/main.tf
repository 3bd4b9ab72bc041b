# Topics and push subscriptions, all derived from shared_lib/delivery/topology.json: no topic or
# subscription name is written in HCL. Every push carries an OIDC token of the invoker service
# account; failed deliveries back off and, after max_delivery_attempts, go to the dead-letter topic.

locals {
  topology = jsondecode(file("${path.module}/../../../shared_lib/delivery/topology.json"))
  retry    = local.topology.retry

  # The topic key whose topic receives dead letters (the only subscription on it has none).
  deadletter_key = "deadletter"

  dead_lettered = { for name, sub in local.topology.subscriptions : name => sub if sub.dead_letter }

  bigquery_subscription_name = "${local.topology.bigquery.topic}-bigquery-sub"

  # The smoke twins (topology.json "smoke", see smoke.tf): twin key => twin topic name, and per
  # subscription on a twinned topic its twin (same target, ordering, dead letters) on the twin.
  smoke = local.topology.smoke
  smoke_topics = {
    for key in local.smoke.topics : "${local.smoke.topic_prefix}${key}" => "${local.smoke.topic_prefix}${local.topology.topics[key]}"
  }
  smoke_subscriptions = {
    for name, sub in local.topology.subscriptions : "${local.smoke.subscription_prefix}${name}" => merge(sub, {
      topic = "${local.smoke.topic_prefix}${sub.topic}"
    }) if contains(local.smoke.topics, sub.topic)
  }
  smoke_dead_lettered = { for name, sub in local.smoke_subscriptions : name => sub if sub.dead_letter }
}

resource "google_pubsub_topic" "this" {
  for_each = local.topology.topics

  project = var.project_id
  name    = each.value
  labels  = var.labels

  # Dead letters are kept a week so an operator can inspect and replay them.
  message_retention_duration = each.key == local.deadletter_key ? "604800s" : null
}

resource "google_pubsub_subscription" "push" {
  for_each = local.topology.subscriptions

  project = var.project_id
  name    = each.key
  topic   = google_pubsub_topic.this[each.value.topic].id
  labels  = var.labels

  ack_deadline_seconds    = local.retry.ack_deadline_seconds
  enable_message_ordering = each.value.ordered

  # topology.json's filter (shared_lib.delivery.filters): a message it does not match is never
  # pushed (brain_shadow: turns that want no candidate; observer: its own records). Changing a
  # filter replaces the subscription.
  filter = try(each.value.filter, null)

  push_config {
    push_endpoint = var.service_urls[each.value.target]

    oidc_token {
      service_account_email = var.invoker_service_account_email
      audience              = var.service_urls[each.value.target]
    }
  }

  retry_policy {
    minimum_backoff = "${local.retry.minimum_backoff_seconds}s"
    maximum_backoff = "${local.retry.maximum_backoff_seconds}s"
  }

  dynamic "dead_letter_policy" {
    for_each = each.value.dead_letter ? [google_pubsub_topic.this[local.deadletter_key].id] : []

    content {
      dead_letter_topic     = dead_letter_policy.value
      max_delivery_attempts = local.retry.max_delivery_attempts
    }
  }

  # An idle subscription (a quiet dev project, the shadow arm while off) must not expire.
  expiration_policy {
    ttl = ""
  }
}

# Every event also lands in BigQuery; columns come from the table schema, unknown fields are dropped.
resource "google_pubsub_subscription" "bigquery" {
  project = var.project_id
  name    = local.bigquery_subscription_name
  topic   = google_pubsub_topic.this[local.topology.bigquery.topic].id
  labels  = var.labels

  bigquery_config {
    table               = var.bigquery_table
    use_table_schema    = true
    drop_unknown_fields = true
    write_metadata      = false
  }

  retry_policy {
    minimum_backoff = "${local.retry.minimum_backoff_seconds}s"
    maximum_backoff = "${local.retry.maximum_backoff_seconds}s"
  }

  dead_letter_policy {
    dead_letter_topic     = google_pubsub_topic.this[local.deadletter_key].id
    max_delivery_attempts = local.retry.max_delivery_attempts
  }

  expiration_policy {
    ttl = ""
  }
}

# The Pub/Sub service agent forwards dead letters: it must publish to the dead-letter topic and
# acknowledge on each subscription that has a dead-letter policy.
resource "google_pubsub_topic_iam_member" "agent_deadletter_publisher" {
  project = var.project_id
  topic   = google_pubsub_topic.this[local.deadletter_key].name
  role    = "roles/pubsub.publisher"
  member  = "serviceAccount:${var.pubsub_service_agent}"
}

resource "google_pubsub_subscription_iam_member" "agent_subscriber" {
  for_each = local.dead_lettered

  project      = var.project_id
  subscription = google_pubsub_subscription.push[each.key].name
  role         = "roles/pubsub.subscriber"
  member       = "serviceAccount:${var.pubsub_service_agent}"
}

resource "google_pubsub_subscription_iam_member" "agent_subscriber_bigquery" {
  project      = var.project_id
  subscription = google_pubsub_subscription.bigquery.name
  role         = "roles/pubsub.subscriber"
  member       = "serviceAccount:${var.pubsub_service_agent}"
}

# The service agent mints the OIDC tokens of the push subscriptions for the invoker account.
resource "google_service_account_iam_member" "agent_token_creator" {
  service_account_id = "projects/${var.project_id}/serviceAccounts/${var.invoker_service_account_email}"
  role               = "roles/iam.serviceAccountTokenCreator"
  member             = "serviceAccount:${var.pubsub_service_agent}"
}
