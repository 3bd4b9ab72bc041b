output "topic_names" {
  description = "Topic key (topology.json) => topic name."
  value       = { for key, topic in google_pubsub_topic.this : key => topic.name }
}

output "topic_ids" {
  description = "Topic key (topology.json) => topic id."
  value       = { for key, topic in google_pubsub_topic.this : key => topic.id }
}

output "subscription_names" {
  description = "Push subscription names, then the BigQuery subscription."
  value       = concat(keys(google_pubsub_subscription.push), [google_pubsub_subscription.bigquery.name])
}
