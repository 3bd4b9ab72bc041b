output "topic_names" {
  description = "Topic key (topology.json) => topic name, smoke twins (smoke.<key>) included."
  value = merge(
    { for key, topic in google_pubsub_topic.this : key => topic.name },
    { for key, topic in google_pubsub_topic.smoke : key => topic.name },
  )
}

output "topic_ids" {
  description = "Topic key (topology.json) => topic id, smoke twins (smoke.<key>) included."
  value = merge(
    { for key, topic in google_pubsub_topic.this : key => topic.id },
    { for key, topic in google_pubsub_topic.smoke : key => topic.id },
  )
}

output "subscription_names" {
  description = "Push subscription names, then the BigQuery subscription, then the smoke twins."
  value = concat(
    keys(google_pubsub_subscription.push),
    [google_pubsub_subscription.bigquery.name],
    keys(google_pubsub_subscription.smoke),
  )
}
