# Log-based metrics from the product's structured JSON logs and the alert policies on them.
#
# Log contract (jsonPayload of the Cloud Run log lines that shared_lib.observability.logs.log_event writes with
# CHARTER_LOG_JSON=1, set by modules/run_services): fields event, layer, outcome, reason_code,
# duration_ms, cost_usd.
#   event=layer_done  one per layer run. Guardian outcomes: allow | confirm | block | modify |
#                     skipped; executor outcomes: executed | failed | skipped.
#   event=llm_call    one per model call, with duration_ms and cost_usd (the LLM adapter's line).
# The event names and outcome words are in local.filters; keep them in step with shared_lib.

locals {
  topology = jsondecode(file("${path.module}/../../../shared_lib/delivery/topology.json"))

  # The observer's subscription on the dead-letter topic: its backlog means dead letters pile up.
  deadletter_subscription = one([for name, sub in local.topology.subscriptions : name if sub.topic == "deadletter"])

  filters = {
    llm_call     = "jsonPayload.event=\"llm_call\""
    tool_calls   = "jsonPayload.event=\"layer_done\" AND jsonPayload.layer=\"executor\" AND jsonPayload.outcome=(\"executed\" OR \"failed\")"
    tool_errors  = "jsonPayload.event=\"layer_done\" AND jsonPayload.layer=\"executor\" AND jsonPayload.outcome=\"failed\""
    verdicts     = "jsonPayload.event=\"layer_done\" AND jsonPayload.layer=\"guardian\" AND jsonPayload.outcome!=\"skipped\""
    block_events = "jsonPayload.event=\"layer_done\" AND jsonPayload.layer=\"guardian\" AND jsonPayload.outcome=\"block\""
    confirms     = "jsonPayload.event=\"layer_done\" AND jsonPayload.layer=\"guardian\" AND jsonPayload.outcome=\"confirm\""
  }

  run_logs = "resource.type=\"cloud_run_revision\""

  channels = concat(var.notification_channel_ids, [for channel in google_monitoring_notification_channel.email : channel.id])

  user_metric = "logging.googleapis.com/user"
}

resource "google_monitoring_notification_channel" "email" {
  for_each = var.alert_email == "" ? toset([]) : toset([var.alert_email])

  project      = var.project_id
  display_name = "Charter ${var.env} alerts (${each.key})"
  type         = "email"
  labels = {
    email_address = each.key
  }
}

# --- log-based metrics -----------------------------------------------------------------------

resource "google_logging_metric" "llm_latency" {
  project         = var.project_id
  name            = "charter/llm_latency"
  description     = "Wall time of LLM calls, by layer."
  filter          = "${local.run_logs} AND ${local.filters.llm_call} AND jsonPayload.duration_ms:*"
  value_extractor = "EXTRACT(jsonPayload.duration_ms)"

  label_extractors = {
    layer = "EXTRACT(jsonPayload.layer)"
  }

  metric_descriptor {
    metric_kind = "DELTA"
    value_type  = "DISTRIBUTION"
    unit        = "ms"

    labels {
      key         = "layer"
      value_type  = "STRING"
      description = "Layer that made the call."
    }
  }

  bucket_options {
    exponential_buckets {
      num_finite_buckets = 32
      growth_factor      = 1.5
      scale              = 10
    }
  }
}

resource "google_logging_metric" "llm_cost" {
  project         = var.project_id
  name            = "charter/llm_cost_usd"
  description     = "Cost of LLM calls in USD, by layer."
  filter          = "${local.run_logs} AND ${local.filters.llm_call} AND jsonPayload.cost_usd:*"
  value_extractor = "EXTRACT(jsonPayload.cost_usd)"

  label_extractors = {
    layer = "EXTRACT(jsonPayload.layer)"
  }

  metric_descriptor {
    metric_kind = "DELTA"
    value_type  = "DISTRIBUTION"
    unit        = "{USD}"

    labels {
      key         = "layer"
      value_type  = "STRING"
      description = "Layer that made the call."
    }
  }

  bucket_options {
    exponential_buckets {
      num_finite_buckets = 30
      growth_factor      = 2
      scale              = 0.0001
    }
  }
}

resource "google_logging_metric" "tool_calls" {
  project     = var.project_id
  name        = "charter/tool_calls"
  description = "Tool executions, by outcome."
  filter      = "${local.run_logs} AND ${local.filters.tool_calls}"

  label_extractors = {
    outcome = "EXTRACT(jsonPayload.outcome)"
  }

  metric_descriptor {
    metric_kind = "DELTA"
    value_type  = "INT64"

    labels {
      key        = "outcome"
      value_type = "STRING"
    }
  }
}

resource "google_logging_metric" "tool_errors" {
  project     = var.project_id
  name        = "charter/tool_errors"
  description = "Tool executions that failed, by reason code."
  filter      = "${local.run_logs} AND ${local.filters.tool_errors}"

  label_extractors = {
    reason_code = "EXTRACT(jsonPayload.reason_code)"
  }

  metric_descriptor {
    metric_kind = "DELTA"
    value_type  = "INT64"

    labels {
      key        = "reason_code"
      value_type = "STRING"
    }
  }
}

resource "google_logging_metric" "verdicts" {
  project     = var.project_id
  name        = "charter/guardian_verdicts"
  description = "Guardian verdicts, by outcome."
  filter      = "${local.run_logs} AND ${local.filters.verdicts}"

  label_extractors = {
    outcome = "EXTRACT(jsonPayload.outcome)"
  }

  metric_descriptor {
    metric_kind = "DELTA"
    value_type  = "INT64"

    labels {
      key        = "outcome"
      value_type = "STRING"
    }
  }
}

resource "google_logging_metric" "blocks" {
  project     = var.project_id
  name        = "charter/guardian_blocks"
  description = "Guardian block verdicts, by reason code."
  filter      = "${local.run_logs} AND ${local.filters.block_events}"

  label_extractors = {
    reason_code = "EXTRACT(jsonPayload.reason_code)"
  }

  metric_descriptor {
    metric_kind = "DELTA"
    value_type  = "INT64"

    labels {
      key        = "reason_code"
      value_type = "STRING"
    }
  }
}

resource "google_logging_metric" "confirms" {
  project     = var.project_id
  name        = "charter/guardian_confirms"
  description = "Guardian confirm verdicts (the user is asked first), by reason code."
  filter      = "${local.run_logs} AND ${local.filters.confirms}"

  label_extractors = {
    reason_code = "EXTRACT(jsonPayload.reason_code)"
  }

  metric_descriptor {
    metric_kind = "DELTA"
    value_type  = "INT64"

    labels {
      key        = "reason_code"
      value_type = "STRING"
    }
  }
}

# --- alert policies --------------------------------------------------------------------------

# Every alert policy is one entry of local.alerts, the one threshold map. Seed thresholds
# (seed 000 §15.1: LLM latency > 10 s, tool error rate > 5 %, confirmation rate > 30 % (info),
# block rate > 10 %, daily cost over budget) are constants on purpose, so changing one is a reviewed
# change; the daily budget is var.daily_cost_budget_usd (per environment); ingress 5xx and dead
# letters are ours.
#   title        display name after "Charter <env>: "; format() gets threshold * title_scale.
#   filter       the numerator series; denominator_filter makes it a ratio (null: a plain series).
#   promql       instead of filter: a PromQL query, format() gets the threshold.
locals {
  alerts = {
    llm_latency = {
      title              = "LLM latency p95 > %.0f s"
      title_scale        = 0.001
      threshold          = 10000
      severity           = "WARNING"
      condition          = "p95 LLM call latency"
      filter             = "${local.run_logs} AND metric.type=\"${local.user_metric}/${google_logging_metric.llm_latency.name}\""
      denominator_filter = null
      promql             = null
      duration           = "300s"
      alignment_period   = "300s"
      aligner            = "ALIGN_PERCENTILE_95"
      reducer            = "REDUCE_MAX"
      group_by           = ["metric.label.layer"]
      documentation      = "LLM calls are slow. Check the provider status and the llm_call logs by layer; consider the fast path flag."
    }
    tool_error_rate = {
      title              = "tool error rate > %.0f %%"
      title_scale        = 100
      threshold          = 0.05
      severity           = "ERROR"
      condition          = "tool errors / tool executions"
      filter             = "${local.run_logs} AND metric.type=\"${local.user_metric}/${google_logging_metric.tool_errors.name}\""
      denominator_filter = "${local.run_logs} AND metric.type=\"${local.user_metric}/${google_logging_metric.tool_calls.name}\""
      promql             = null
      duration           = "300s"
      alignment_period   = "300s"
      aligner            = "ALIGN_RATE"
      reducer            = "REDUCE_SUM"
      group_by           = null
      documentation      = "Tool handlers fail. Group the executor layer_done logs by reason_code; the executor receipts show the turns affected."
    }
    confirm_rate = {
      title              = "confirmation rate > %.0f %% (info)"
      title_scale        = 100
      threshold          = 0.30
      severity           = null
      condition          = "confirm verdicts / all verdicts"
      filter             = "${local.run_logs} AND metric.type=\"${local.user_metric}/${google_logging_metric.confirms.name}\""
      denominator_filter = "${local.run_logs} AND metric.type=\"${local.user_metric}/${google_logging_metric.verdicts.name}\""
      promql             = null
      duration           = "1800s"
      alignment_period   = "300s"
      aligner            = "ALIGN_RATE"
      reducer            = "REDUCE_SUM"
      group_by           = null
      documentation      = "Informational: users are asked to confirm often. Review the confirm reason codes; too many prompts train people to click yes."
    }
    block_rate = {
      title              = "guardian block rate > %.0f %%"
      title_scale        = 100
      threshold          = 0.10
      severity           = "WARNING"
      condition          = "block verdicts / all verdicts"
      filter             = "${local.run_logs} AND metric.type=\"${local.user_metric}/${google_logging_metric.blocks.name}\""
      denominator_filter = "${local.run_logs} AND metric.type=\"${local.user_metric}/${google_logging_metric.verdicts.name}\""
      promql             = null
      duration           = "900s"
      alignment_period   = "300s"
      aligner            = "ALIGN_RATE"
      reducer            = "REDUCE_SUM"
      group_by           = null
      documentation      = "The guardian blocks many proposals: a prompt or model regression, or abuse. Compare arms in the shadow report."
    }
    # A sum of a distribution metric over a day is not expressible as a threshold condition;
    # PromQL reads the distribution's _sum series.
    daily_cost = {
      title              = "LLM cost over %v USD per day"
      title_scale        = 1
      threshold          = var.daily_cost_budget_usd
      severity           = "CRITICAL"
      condition          = "LLM cost in the last 24 h"
      filter             = null
      denominator_filter = null
      promql             = "sum(increase(logging_googleapis_com:user_${replace(google_logging_metric.llm_cost.name, "/", "_")}_sum{monitored_resource=\"cloud_run_revision\"}[1d])) > %v"
      duration           = "0s"
      alignment_period   = "300s"
      aligner            = null
      reducer            = null
      group_by           = null
      documentation      = "The daily LLM budget is exceeded. Consider the kill switch or a cheaper model in the flags file."
    }
    deadletter_backlog = {
      title              = "dead letters waiting (more than %.0f)"
      title_scale        = 1
      threshold          = 0
      severity           = "ERROR"
      condition          = "undelivered messages on ${local.deadletter_subscription}"
      filter             = "resource.type=\"pubsub_subscription\" AND resource.label.subscription_id=\"${local.deadletter_subscription}\" AND metric.type=\"pubsub.googleapis.com/subscription/num_undelivered_messages\""
      denominator_filter = null
      promql             = null
      duration           = "60s"
      alignment_period   = "60s"
      aligner            = "ALIGN_MAX"
      reducer            = null
      group_by           = null
      documentation      = "Turns failed every delivery attempt and reached the dead-letter topic. Inspect them before replaying."
    }
    ingress_5xx = {
      title              = "ingress 5xx > %.0f %%"
      title_scale        = 100
      threshold          = 0.01
      severity           = "ERROR"
      condition          = "ingress 5xx / all ingress requests"
      filter             = "${local.run_logs} AND resource.label.service_name=\"${var.ingress_service_name}\" AND metric.type=\"run.googleapis.com/request_count\" AND metric.label.response_code_class=\"5xx\""
      denominator_filter = "${local.run_logs} AND resource.label.service_name=\"${var.ingress_service_name}\" AND metric.type=\"run.googleapis.com/request_count\""
      promql             = null
      duration           = "300s"
      alignment_period   = "60s"
      aligner            = "ALIGN_RATE"
      reducer            = "REDUCE_SUM"
      group_by           = null
      documentation      = "Webhooks fail at ingress; providers retry for a while, then drop the event. Check the ingress logs."
    }
  }
}

resource "google_monitoring_alert_policy" "this" {
  for_each = local.alerts

  project               = var.project_id
  display_name          = "Charter ${var.env}: ${format(each.value.title, each.value.threshold * each.value.title_scale)}"
  combiner              = "OR"
  severity              = each.value.severity
  notification_channels = local.channels

  conditions {
    display_name = each.value.condition

    dynamic "condition_threshold" {
      for_each = each.value.promql == null ? [1] : []

      content {
        filter             = each.value.filter
        denominator_filter = each.value.denominator_filter
        comparison         = "COMPARISON_GT"
        threshold_value    = each.value.threshold
        duration           = each.value.duration

        aggregations {
          alignment_period     = each.value.alignment_period
          per_series_aligner   = each.value.aligner
          cross_series_reducer = each.value.reducer
          group_by_fields      = each.value.group_by
        }

        dynamic "denominator_aggregations" {
          for_each = each.value.denominator_filter == null ? [] : [1]

          content {
            alignment_period     = each.value.alignment_period
            per_series_aligner   = each.value.aligner
            cross_series_reducer = each.value.reducer
          }
        }
      }
    }

    dynamic "condition_prometheus_query_language" {
      for_each = each.value.promql == null ? [] : [1]

      content {
        query               = format(each.value.promql, each.value.threshold)
        duration            = each.value.duration
        evaluation_interval = each.value.alignment_period
      }
    }
  }

  documentation {
    mime_type = "text/markdown"
    content   = each.value.documentation
  }
}

# The policies were one resource each before they came from local.alerts; keep them in place.
moved {
  from = google_monitoring_alert_policy.llm_latency
  to   = google_monitoring_alert_policy.this["llm_latency"]
}

moved {
  from = google_monitoring_alert_policy.tool_error_rate
  to   = google_monitoring_alert_policy.this["tool_error_rate"]
}

moved {
  from = google_monitoring_alert_policy.confirm_rate
  to   = google_monitoring_alert_policy.this["confirm_rate"]
}

moved {
  from = google_monitoring_alert_policy.block_rate
  to   = google_monitoring_alert_policy.this["block_rate"]
}

moved {
  from = google_monitoring_alert_policy.daily_cost
  to   = google_monitoring_alert_policy.this["daily_cost"]
}

moved {
  from = google_monitoring_alert_policy.deadletter_backlog
  to   = google_monitoring_alert_policy.this["deadletter_backlog"]
}

moved {
  from = google_monitoring_alert_policy.ingress_5xx
  to   = google_monitoring_alert_policy.this["ingress_5xx"]
}
