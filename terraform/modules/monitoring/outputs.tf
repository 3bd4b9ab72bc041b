output "alert_policy_names" {
  description = "Alert key (local.alerts) => alert policy resource name."
  value       = { for key, policy in google_monitoring_alert_policy.this : key => policy.name }
}
