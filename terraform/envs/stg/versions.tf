terraform {
  required_version = ">= 1.9"

  # The state bucket is given at init: terraform init -backend-config="bucket=<state bucket>"
  backend "gcs" {
    prefix = "charter/stg"
  }

  required_providers {
    google = {
      source  = "hashicorp/google"
      version = "~> 6.0"
    }
  }
}

provider "google" {
  project = var.project_id
  region  = var.region
}
