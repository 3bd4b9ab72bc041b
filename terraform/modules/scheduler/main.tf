# Periodic jobs, each a POST to the admin service with an OIDC token of the scheduler account
# (which holds run.invoker on admin and nothing else).

locals {
  jobs = {
    heartbeat = {
      description      = "Liveness of the whole chain: admin publishes a synthetic event and checks it arrives."
      schedule         = "*/5 * * * *"
      path             = "/tasks/heartbeat"
      attempt_deadline = "60s"
    }
    cost-check = {
      description      = "Daily LLM cost against the budget; flips the kill switch if a hard limit is hit."
      schedule         = "5 0 * * *"
      path             = "/tasks/cost-check"
      attempt_deadline = "300s"
    }
    # one job message per organisation on the memory topic; the memory target compacts the recently
    # active conversations a missed turn event left over the threshold (seed 001 §19)
    memory-compact = {
      description      = "Memory: compaction sweep of recently active conversations, one job per organisation."
      schedule         = "17 * * * *"
      path             = "/tasks/memory/compact"
      attempt_deadline = "120s"
    }
    # seed 001 §22: the day told as one episode per organisation (once per org-day), then §21's
    # tagging with the day's interests (once per org-day); both in the scheduler's time zone
    memory-daily-digest = {
      description      = "Memory: the daily digest episode of each organisation active today."
      schedule         = "30 23 * * *"
      path             = "/tasks/memory/daily_digest"
      attempt_deadline = "120s"
    }
    memory-tagging = {
      description      = "Memory: tag today's and older memories with the day's interests, per organisation."
      schedule         = "50 23 * * *"
      path             = "/tasks/memory/tagging"
      attempt_deadline = "120s"
    }
    # seed 001 §15.5: delegated jobs whose publish was lost go again, stalled or late ones time out
    jobs-watchdog = {
      description      = "Delegated jobs: republish lost ones, time out stalled or late ones, report them."
      schedule         = "* * * * *"
      path             = "/tasks/jobs/watchdog"
      attempt_deadline = "60s"
    }
    maintenance = {
      description      = "Nightly maintenance: expired pending actions, stale sessions, shadow report snapshot."
      schedule         = "30 3 * * *"
      path             = "/tasks/maintenance"
      attempt_deadline = "300s"
    }
  }
}

resource "google_cloud_scheduler_job" "this" {
  for_each = local.jobs

  project          = var.project_id
  region           = var.region
  name             = "charter-${each.key}"
  description      = each.value.description
  schedule         = each.value.schedule
  time_zone        = var.time_zone
  attempt_deadline = each.value.attempt_deadline

  retry_config {
    retry_count          = 1
    min_backoff_duration = "10s"
  }

  http_target {
    http_method = "POST"
    uri         = "${var.admin_url}${each.value.path}"
    body        = base64encode(jsonencode({ job = each.key }))
    headers = {
      "Content-Type" = "application/json"
    }

    oidc_token {
      service_account_email = var.scheduler_email
      audience              = var.admin_url
    }
  }
}
