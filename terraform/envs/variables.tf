# The one root of every environment. env, service_sizing, firestore_pitr, daily_llm_budget_usd,
# deletion_protection and vault_key_generations have no default: they are the environment's
# choices and come from its tfvars file (dev.tfvars, stg.tfvars, prod.tfvars). project_id, region,
# image and the rollout variables are given by the pipeline (or on the command line).

variable "project_id" {
  description = "GCP project of the environment (one project per environment)."
  type        = string

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{4,28}[a-z0-9]$", var.project_id))
    error_message = "project_id must be a GCP project id: 6-30 characters, lowercase letters, digits and hyphens, starting with a letter."
  }
}

variable "region" {
  description = "Region of Cloud Run and Cloud Scheduler."
  type        = string
  default     = "asia-northeast1"

  validation {
    condition     = can(regex("^[a-z]+-[a-z]+[0-9]+$", var.region))
    error_message = "region must be a GCP region such as asia-northeast1 or us-central1."
  }
}

variable "env" {
  description = "Environment name; set by the environment's tfvars file, never on the command line."
  type        = string

  validation {
    condition     = contains(["dev", "stg", "prod"], var.env)
    error_message = "env must be dev, stg or prod (one tfvars file each)."
  }
}

variable "image" {
  description = "Container image every service runs, pinned by tag or digest (REGION-docker.pkg.dev/PROJECT/REPO/charter:COMMIT_SHA)."
  type        = string

  validation {
    condition     = can(regex("^[a-z0-9.-]+(:[0-9]+)?(/[a-z0-9._-]+)+(@sha256:[a-f0-9]{64}|:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})$", var.image)) && !endswith(var.image, ":latest")
    error_message = "image must be REGISTRY/PATH:TAG or REGISTRY/PATH@sha256:DIGEST, and not :latest."
  }
}

variable "candidate_tag" {
  description = "Traffic tag of the revision built from image (the pipeline uses c-<short sha>); empty = latest revision."
  type        = string
  default     = ""

  validation {
    condition     = can(regex("^([a-z][a-z0-9-]{0,40}[a-z0-9])?$", var.candidate_tag))
    error_message = "candidate_tag must be empty or lowercase letters, digits and hyphens (2-42 characters, starting with a letter)."
  }
}

variable "candidate_percent" {
  description = "Percent of traffic for the candidate revision: 0 while smoke testing, then 100."
  type        = number
  default     = 100

  validation {
    condition     = var.candidate_percent >= 0 && var.candidate_percent <= 100 && floor(var.candidate_percent) == var.candidate_percent
    error_message = "candidate_percent must be a whole number from 0 to 100."
  }
}

variable "stable_tag" {
  description = "Tag of the revision that keeps the rest of the traffic while candidate_percent < 100."
  type        = string
  default     = ""

  validation {
    condition     = can(regex("^([a-z][a-z0-9-]{0,40}[a-z0-9])?$", var.stable_tag))
    error_message = "stable_tag must be empty or a revision tag (lowercase letters, digits, hyphens)."
  }
}

variable "service_sizing" {
  description = "Per-target overrides of the module's sizing (keys are topology.json targets); {} keeps the module's sizing."
  type = map(object({
    cpu             = optional(string)
    memory          = optional(string)
    concurrency     = optional(number)
    min_instances   = optional(number)
    max_instances   = optional(number)
    timeout_seconds = optional(number)
  }))

  validation {
    condition = alltrue([
      for sizing in values(var.service_sizing) :
      coalesce(sizing.max_instances, 1) >= 1 && coalesce(sizing.max_instances, 1) <= 100 &&
      coalesce(sizing.min_instances, 0) >= 0 && coalesce(sizing.min_instances, 0) <= 10 &&
      coalesce(sizing.min_instances, 0) <= coalesce(sizing.max_instances, 100)
    ])
    error_message = "Instance limits: max_instances 1-100, min_instances 0-10 and not above max_instances."
  }

  validation {
    condition = alltrue([
      for sizing in values(var.service_sizing) :
      coalesce(sizing.concurrency, 1) >= 1 && coalesce(sizing.concurrency, 1) <= 1000 &&
      coalesce(sizing.timeout_seconds, 60) >= 1 && coalesce(sizing.timeout_seconds, 60) <= 3600 &&
      contains(["1", "2", "4", "8"], coalesce(sizing.cpu, "1")) &&
      can(regex("^[0-9]+(Mi|Gi)$", coalesce(sizing.memory, "512Mi")))
    ])
    error_message = "Sizing: concurrency 1-1000, timeout_seconds 1-3600, cpu one of 1, 2, 4, 8, memory like 512Mi or 2Gi."
  }
}

variable "firestore_location" {
  description = "Firestore location (region or multi-region); cannot change after creation."
  type        = string
  default     = "asia-northeast1"

  validation {
    condition     = can(regex("^[a-z0-9]+(-[a-z0-9]+)*$", var.firestore_location))
    error_message = "firestore_location must be a location id such as asia-northeast1 or nam5."
  }
}

variable "firestore_pitr" {
  description = "Enable Firestore point-in-time recovery."
  type        = bool
}

variable "bigquery_location" {
  description = "BigQuery dataset location."
  type        = string
  default     = "asia-northeast1"

  validation {
    condition     = can(regex("^([A-Z]{2}|[a-z]+-[a-z]+[0-9]+)$", var.bigquery_location))
    error_message = "bigquery_location must be a multi-region (US, EU) or a region such as asia-northeast1."
  }
}

variable "daily_llm_budget_usd" {
  # Seed 000 §15.1 warns above 5,000 JPY a day, about 33 USD; dev and stg stay lower to catch loops early.
  description = "LLM spend per day (USD) above which the cost alert fires."
  type        = number

  validation {
    condition     = var.daily_llm_budget_usd > 0 && var.daily_llm_budget_usd <= 10000
    error_message = "daily_llm_budget_usd must be above 0 and at most 10000."
  }
}

variable "notification_channel_ids" {
  description = "Existing notification channels for alerts (projects/PROJECT/notificationChannels/ID)."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for id in var.notification_channel_ids : can(regex("^projects/[^/]+/notificationChannels/[0-9]+$", id))])
    error_message = "Each notification channel must be projects/PROJECT/notificationChannels/ID."
  }
}

variable "alert_email" {
  description = "Optional email address that gets its own notification channel."
  type        = string
  default     = ""

  validation {
    condition     = var.alert_email == "" || can(regex("^[^@\\s]+@[^@\\s]+\\.[^@\\s]+$", var.alert_email))
    error_message = "alert_email must be empty or an email address."
  }
}

variable "admin_invoker_members" {
  description = "Operators who may reach the admin service (IAP or gcloud run services proxy), e.g. group:charter-operators@example.com."
  type        = list(string)
  default     = []

  validation {
    condition     = alltrue([for member in var.admin_invoker_members : can(regex("^(user|group|serviceAccount|domain):[^\\s]+$", member))])
    error_message = "Each admin invoker must be user:, group:, serviceAccount: or domain: followed by an identity (never allUsers)."
  }
}

variable "flags_file" {
  description = "Flags JSON file written to Firestore config/flags: this environment's ../flags/<env>.json (set in <env>.tfvars)."
  type        = string
  default     = null
}

variable "scheduler_time_zone" {
  description = "Time zone of the scheduler jobs (tz database name)."
  type        = string
  default     = "Etc/UTC"

  validation {
    condition     = can(regex("^[A-Za-z_]+(/[A-Za-z0-9_+-]+)*$", var.scheduler_time_zone))
    error_message = "scheduler_time_zone must be a tz database name such as Etc/UTC or Asia/Tokyo."
  }
}

variable "deletion_protection" {
  description = "Protect Cloud Run services, the Firestore database and the BigQuery table from deletion."
  type        = bool
}

variable "vault_key_generations" {
  description = "Generations of the vault key Terraform generates (charter-vault-key), the encrypting one first; see terraform/README.md for rotation."
  type        = list(string)

  validation {
    condition     = length(var.vault_key_generations) >= 1 && alltrue([for g in var.vault_key_generations : can(regex("^[a-z0-9][a-z0-9-]{0,30}$", g))])
    error_message = "vault_key_generations must name at least one generation (lowercase letters, digits, hyphens)."
  }
}
