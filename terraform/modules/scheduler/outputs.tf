output "job_names" {
  description = "Scheduler job names."
  value       = [for job in google_cloud_scheduler_job.this : job.name]
}
