# Log-based metrics from the product's structured JSON logs and the alert policies on them.
#
# Log contract (jsonPayload of the Cloud Run log lines that shared_lib.logs.log_event writes with
# CHARTER_LOG_JSON=1, set by modules/run_services): fields event, layer, outcome, reason_code,
# duration_ms, cost_usd.
#   event=layer_done  one per layer run. Guardian outcomes: allow | confirm | block | modify |
#                     skipped; executor outcomes: executed | failed | skipped.
#   event=llm_call    one per model call, with duration_ms and cost_usd (the LLM adapter's line).
# The event names and outcome words are in local.filters; keep them in step with shared_lib.

locals {
  topology = jsondecode(file("${path.module}/../../../shared_lib/topology.json"))

  # The observer's subscription on the dead-letter topic: its backlog means dead letters pile up.
  deadletter_subscription = one([for name, sub in local.topology.subscriptions : name if sub.topic == "deadletter"])

  # Seed thresholds (seed 000 §15.1; the daily cost one is var.daily_cost_budget_usd): constants
  # on purpose, so changing one is a reviewed change. ingress_5xx_rate and deadletter_depth are ours.
  thresholds = {
    llm_latency_ms   = 10000
    tool_error_rate  = 0.05
    confirm_rate     = 0.30
    block_rate       = 0.10
    ingress_5xx_rate = 0.01
    deadletter_depth = 0
  }

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

resource "google_monitoring_alert_policy" "llm_latency" {
  project               = var.project_id
  display_name          = "Charter ${var.env}: LLM latency p95 > ${format("%.0f", local.thresholds.llm_latency_ms / 1000)} s"
  combiner              = "OR"
  severity              = "WARNING"
  notification_channels = local.channels

  conditions {
    display_name = "p95 LLM call latency"

    condition_threshold {
      filter          = "${local.run_logs} AND metric.type=\"${local.user_metric}/${google_logging_metric.llm_latency.name}\""
      comparison      = "COMPARISON_GT"
      threshold_value = local.thresholds.llm_latency_ms
      duration        = "300s"

      aggregations {
        alignment_period     = "300s"
        per_series_aligner   = "ALIGN_PERCENTILE_95"
        cross_series_reducer = "REDUCE_MAX"
        group_by_fields      = ["metric.label.layer"]
      }
    }
  }

  documentation {
    mime_type = "text/markdown"
    content   = "LLM calls are slow. Check the provider status and the llm_call logs by layer; consider the fast path flag."
  }
}

resource "google_monitoring_alert_policy" "tool_error_rate" {
  project               = var.project_id
  display_name          = "Charter ${var.env}: tool error rate > ${format("%.0f", local.thresholds.tool_error_rate * 100)} %"
  combiner              = "OR"
  severity              = "ERROR"
  notification_channels = local.channels

  conditions {
    display_name = "tool errors / tool executions"

    condition_threshold {
      filter             = "${local.run_logs} AND metric.type=\"${local.user_metric}/${google_logging_metric.tool_errors.name}\""
      denominator_filter = "${local.run_logs} AND metric.type=\"${local.user_metric}/${google_logging_metric.tool_calls.name}\""
      comparison         = "COMPARISON_GT"
      threshold_value    = local.thresholds.tool_error_rate
      duration           = "300s"

      aggregations {
        alignment_period     = "300s"
        per_series_aligner   = "ALIGN_RATE"
        cross_series_reducer = "REDUCE_SUM"
      }

      denominator_aggregations {
        alignment_period     = "300s"
        per_series_aligner   = "ALIGN_RATE"
        cross_series_reducer = "REDUCE_SUM"
      }
    }
  }

  documentation {
    mime_type = "text/markdown"
    content   = "Tool handlers fail. Group the executor layer_done logs by reason_code; the executor receipts show the turns affected."
  }
}

resource "google_monitoring_alert_policy" "confirm_rate" {
  project               = var.project_id
  display_name          = "Charter ${var.env}: confirmation rate > ${format("%.0f", local.thresholds.confirm_rate * 100)} % (info)"
  combiner              = "OR"
  notification_channels = local.channels

  conditions {
    display_name = "confirm verdicts / all verdicts"

    condition_threshold {
      filter             = "${local.run_logs} AND metric.type=\"${local.user_metric}/${google_logging_metric.confirms.name}\""
      denominator_filter = "${local.run_logs} AND metric.type=\"${local.user_metric}/${google_logging_metric.verdicts.name}\""
      comparison         = "COMPARISON_GT"
      threshold_value    = local.thresholds.confirm_rate
      duration           = "1800s"

      aggregations {
        alignment_period     = "300s"
        per_series_aligner   = "ALIGN_RATE"
        cross_series_reducer = "REDUCE_SUM"
      }

      denominator_aggregations {
        alignment_period     = "300s"
        per_series_aligner   = "ALIGN_RATE"
        cross_series_reducer = "REDUCE_SUM"
      }
    }
  }

  documentation {
    mime_type = "text/markdown"
    content   = "Informational: users are asked to confirm often. Review the confirm reason codes; too many prompts train people to click yes."
  }
}

resource "google_monitoring_alert_policy" "block_rate" {
  project               = var.project_id
  display_name          = "Charter ${var.env}: guardian block rate > ${format("%.0f", local.thresholds.block_rate * 100)} %"
  combiner              = "OR"
  severity              = "WARNING"
  notification_channels = local.channels

  conditions {
    display_name = "block verdicts / all verdicts"

    condition_threshold {
      filter             = "${local.run_logs} AND metric.type=\"${local.user_metric}/${google_logging_metric.blocks.name}\""
      denominator_filter = "${local.run_logs} AND metric.type=\"${local.user_metric}/${google_logging_metric.verdicts.name}\""
      comparison         = "COMPARISON_GT"
      threshold_value    = local.thresholds.block_rate
      duration           = "900s"

      aggregations {
        alignment_period     = "300s"
        per_series_aligner   = "ALIGN_RATE"
        cross_series_reducer = "REDUCE_SUM"
      }

      denominator_aggregations {
        alignment_period     = "300s"
        per_series_aligner   = "ALIGN_RATE"
        cross_series_reducer = "REDUCE_SUM"
      }
    }
  }

  documentation {
    mime_type = "text/markdown"
    content   = "The guardian blocks many proposals: a prompt or model regression, or abuse. Compare arms in the shadow report."
  }
}

resource "google_monitoring_alert_policy" "daily_cost" {
  project               = var.project_id
  display_name          = "Charter ${var.env}: LLM cost over ${var.daily_cost_budget_usd} USD per day"
  combiner              = "OR"
  severity              = "CRITICAL"
  notification_channels = local.channels

  conditions {
    display_name = "LLM cost in the last 24 h"

    # A sum of a distribution metric over a day is not expressible as a threshold condition;
    # PromQL reads the distribution's _sum series.
    condition_prometheus_query_language {
      query               = "sum(increase(logging_googleapis_com:user_${replace(google_logging_metric.llm_cost.name, "/", "_")}_sum{monitored_resource=\"cloud_run_revision\"}[1d])) > ${var.daily_cost_budget_usd}"
      duration            = "0s"
      evaluation_interval = "300s"
    }
  }

  documentation {
    mime_type = "text/markdown"
    content   = "The daily LLM budget is exceeded. Consider the kill switch or a cheaper model in the flags file."
  }
}

resource "google_monitoring_alert_policy" "deadletter_backlog" {
  project               = var.project_id
  display_name          = "Charter ${var.env}: dead letters waiting"
  combiner              = "OR"
  severity              = "ERROR"
  notification_channels = local.channels

  conditions {
    display_name = "undelivered messages on ${local.deadletter_subscription}"

    condition_threshold {
      filter          = "resource.type=\"pubsub_subscription\" AND resource.label.subscription_id=\"${local.deadletter_subscription}\" AND metric.type=\"pubsub.googleapis.com/subscription/num_undelivered_messages\""
      comparison      = "COMPARISON_GT"
      threshold_value = local.thresholds.deadletter_depth
      duration        = "60s"

      aggregations {
        alignment_period   = "60s"
        per_series_aligner = "ALIGN_MAX"
      }
    }
  }

  documentation {
    mime_type = "text/markdown"
    content   = "Turns failed every delivery attempt and reached the dead-letter topic. Inspect them before replaying."
  }
}

resource "google_monitoring_alert_policy" "ingress_5xx" {
  project               = var.project_id
  display_name          = "Charter ${var.env}: ingress 5xx > ${format("%.0f", local.thresholds.ingress_5xx_rate * 100)} %"
  combiner              = "OR"
  severity              = "ERROR"
  notification_channels = local.channels

  conditions {
    display_name = "ingress 5xx / all ingress requests"

    condition_threshold {
      filter             = "${local.run_logs} AND resource.label.service_name=\"${var.ingress_service_name}\" AND metric.type=\"run.googleapis.com/request_count\" AND metric.label.response_code_class=\"5xx\""
      denominator_filter = "${local.run_logs} AND resource.label.service_name=\"${var.ingress_service_name}\" AND metric.type=\"run.googleapis.com/request_count\""
      comparison         = "COMPARISON_GT"
      threshold_value    = local.thresholds.ingress_5xx_rate
      duration           = "300s"

      aggregations {
        alignment_period     = "60s"
        per_series_aligner   = "ALIGN_RATE"
        cross_series_reducer = "REDUCE_SUM"
      }

      denominator_aggregations {
        alignment_period     = "60s"
        per_series_aligner   = "ALIGN_RATE"
        cross_series_reducer = "REDUCE_SUM"
      }
    }
  }

  documentation {
    mime_type = "text/markdown"
    content   = "Webhooks fail at ingress; providers retry for a while, then drop the event. Check the ingress logs."
  }
}
