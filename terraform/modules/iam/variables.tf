variable "project_id" {
  description = "GCP project."
  type        = string
}

variable "topic_names" {
  description = "Topic key (topology.json) => topic name, from modules/pubsub."
  type        = map(string)
}

variable "secret_ids" {
  description = "Secret name => secret resource id, from modules/secrets."
  type        = map(string)
}

variable "service_secrets" {
  description = "Target => {env var name => secret name} it mounts (local.service_secrets of modules/run_services)."
  type        = map(map(string))
}
