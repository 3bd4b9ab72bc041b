# prod: production. Warm instances on the hot path, point-in-time recovery, deletion protection.
# Used with prod.gcs.tfbackend; reviewed like code. Non-secret settings of this environment
# (alert_email, admin_invoker_members, notification_channel_ids) belong here too; secret values
# never do (terraform/README.md, "Secrets").

env = "prod"

# Seed 000 §15.1 warns above 5,000 JPY a day, about 33 USD.
daily_llm_budget_usd = 33
deletion_protection  = true
firestore_pitr       = true

# One warm instance on each service a user waits for; more headroom than the module's maximum.
service_sizing = {
  ingress   = { min_instances = 1, max_instances = 50 }
  brain     = { min_instances = 1, max_instances = 30 }
  responder = { min_instances = 1, max_instances = 30 }
}

# Vault key generations, the encrypting one first (rotation: terraform/README.md).
vault_key_generations = ["k1"]

# This environment's flags file (stage of the promotion ladder: terraform/flags/, docs/ROLLOUT.md).
flags_file = "../flags/prod.json"
