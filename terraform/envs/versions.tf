terraform {
  required_version = ">= 1.9"

  # Partial configuration: the prefix comes from <env>.gcs.tfbackend, the bucket (one per project)
  # from the command line:
  #   terraform init -reconfigure -backend-config=<env>.gcs.tfbackend -backend-config="bucket=<bucket>"
  backend "gcs" {}

  required_providers {
    google = {
      source  = "hashicorp/google"
      version = "~> 6.0"
    }
    random = {
      source  = "hashicorp/random"
      version = "~> 3.6"
    }
  }
}

provider "google" {
  project = var.project_id
  region  = var.region
}
