# Smoke twins: before a promotion every candidate revision must handle a turn, but a push
# subscription delivers to a service's URL, i.e. to the revisions that have traffic. Cloud Run
# routes to a revision without traffic only through its tag URL, so smoke turns get their own
# topics (smoke.<topic>) whose subscriptions (smoke-<name>) push to the candidate's tag URL of the
# same target (var.candidate_urls, computed from the candidate tag in modules/run_services). The
# ingress marks a webhook with a valid signed smoke header as a smoke turn, and every layer
# publishes a smoke turn to the twin of its topic (shared_lib/delivery/topology.py route). Names, targets,
# ordering and dead letters all come from topology.json; dead letters of smoke turns go to the one
# dead-letter topic; there is no BigQuery twin, so smoke records stay out of the analytics table.

resource "google_pubsub_topic" "smoke" {
  for_each = local.smoke_topics

  project = var.project_id
  name    = each.value
  labels  = merge(var.labels, { "charter-smoke" = "true" })
}

resource "google_pubsub_subscription" "smoke" {
  for_each = local.smoke_subscriptions

  project = var.project_id
  name    = each.key
  topic   = google_pubsub_topic.smoke[each.value.topic].id
  labels  = merge(var.labels, { "charter-smoke" = "true" })

  ack_deadline_seconds    = local.retry.ack_deadline_seconds
  enable_message_ordering = each.value.ordered

  # topology.json's filter (shared_lib.delivery.filters): a message it does not match is never
  # pushed (brain_shadow: turns that want no candidate; observer: its own records). Changing a
  # filter replaces the subscription.
  filter = try(each.value.filter, null)

  push_config {
    push_endpoint = var.candidate_urls[each.value.target]

    # The service URL is always an accepted audience, whichever URL of the service is called
    # (tag URLs included), so the token is the same as the chain subscription's.
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

  # Smoke topics are quiet between deploys: the subscriptions must not expire.
  expiration_policy {
    ttl = ""
  }
}

resource "google_pubsub_subscription_iam_member" "agent_subscriber_smoke" {
  for_each = local.smoke_dead_lettered

  project      = var.project_id
  subscription = google_pubsub_subscription.smoke[each.key].name
  role         = "roles/pubsub.subscriber"
  member       = "serviceAccount:${var.pubsub_service_agent}"
}
