variable "project_id" {
  description = "GCP project."
  type        = string
}

variable "env" {
  description = "Environment name, shown in alert titles."
  type        = string
}

variable "ingress_service_name" {
  description = "Cloud Run service name of the ingress target."
  type        = string
}

variable "daily_cost_budget_usd" {
  description = "Alert when the LLM cost of the last 24 h exceeds this many USD."
  type        = number
}

variable "notification_channel_ids" {
  description = "Existing notification channel ids (projects/P/notificationChannels/N) every alert goes to."
  type        = list(string)
  default     = []
}

variable "alert_email" {
  description = "If set, an email notification channel is created for it."
  type        = string
  default     = ""
}
