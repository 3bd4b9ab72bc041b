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
