output "alert_policy_names" {
  description = "Alert policy resource names."
  value = [
    google_monitoring_alert_policy.llm_latency.name,
    google_monitoring_alert_policy.tool_error_rate.name,
    google_monitoring_alert_policy.confirm_rate.name,
    google_monitoring_alert_policy.block_rate.name,
    google_monitoring_alert_policy.daily_cost.name,
    google_monitoring_alert_policy.deadletter_backlog.name,
    google_monitoring_alert_policy.ingress_5xx.name,
  ]
}
