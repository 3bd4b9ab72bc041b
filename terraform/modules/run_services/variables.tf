variable "project_id" {
  description = "GCP project."
  type        = string
}

variable "region" {
  description = "Cloud Run region."
  type        = string
}

variable "vertex_region" {
  description = "Region of Claude on Vertex AI, the second LLM peer (CHARTER_PEERS)."
  type        = string
  default     = "us-east5"
}

variable "env" {
  description = "Environment name (dev, stg, prod); exported as CHARTER_ENV."
  type        = string
}

variable "image" {
  description = "The one container image every service runs."
  type        = string
}

variable "candidate_tag" {
  description = "Tag of the revision built from var.image (c-<short sha>); empty = plain latest revision."
  type        = string
  default     = ""
}

variable "candidate_percent" {
  description = "Traffic percent for the candidate revision (0 while smoke testing, then 100)."
  type        = number
  default     = 100
}

variable "stable_tag" {
  description = "Tag of the revision that keeps 100 - candidate_percent of the traffic."
  type        = string
  default     = ""
}

variable "sizing" {
  description = "Per-target overrides of CPU, memory, concurrency, instances and timeout (null = module default)."
  type = map(object({
    cpu             = optional(string)
    memory          = optional(string)
    concurrency     = optional(number)
    min_instances   = optional(number)
    max_instances   = optional(number)
    timeout_seconds = optional(number)
  }))
  default = {}

  validation {
    condition     = alltrue([for target in keys(var.sizing) : contains(keys(local.topology.targets), target)])
    error_message = "sizing keys must be targets of shared_lib/delivery/topology.json."
  }
}

variable "service_account_emails" {
  description = "Target => its own service account email (modules/iam)."
  type        = map(string)
}

variable "flags_document_path" {
  description = "Firestore path of the flag document, exported as CHARTER_FLAGS_DOCUMENT."
  type        = string
}

variable "pubsub_invoker_email" {
  description = "The only identity that may invoke the internal services."
  type        = string
}

variable "scheduler_email" {
  description = "Identity of the Cloud Scheduler jobs; may invoke admin."
  type        = string
}

variable "admin_invoker_members" {
  description = "Operators (user:, group:) who may reach admin through IAP or `gcloud run services proxy`."
  type        = list(string)
  default     = []
}

variable "deletion_protection" {
  description = "Refuse to delete the services."
  type        = bool
  default     = true
}

variable "labels" {
  description = "Labels put on services and revisions."
  type        = map(string)
  default     = {}
}

variable "trace_sample_ratio" {
  description = "The share of turns traced to Cloud Trace (CHARTER_TRACE_SAMPLE_RATIO, 0..1); a caller's sampled traceparent is always followed."
  type        = number
  default     = 1

  validation {
    condition     = var.trace_sample_ratio >= 0 && var.trace_sample_ratio <= 1
    error_message = "trace_sample_ratio is between 0 and 1."
  }
}

variable "persona_core_sha256" {
  description = "The persona core's pinned SHA-256 (CHARTER_PERSONA_CORE_SHA256); empty: the pin of the persona file (personas/soulkun.toml core_sha256). Set it only when shipping a core of your own."
  type        = string
  default     = ""

  validation {
    condition     = can(regex("^([0-9a-f]{64})?$", var.persona_core_sha256))
    error_message = "persona_core_sha256 is empty or 64 lowercase hex digits."
  }
}
