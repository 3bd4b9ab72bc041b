# dev: developers' integration environment. Scales to zero, no deletion protection, small budget.
# Used with dev.gcs.tfbackend; reviewed like code. Non-secret settings of this environment
# (alert_email, admin_invoker_members, notification_channel_ids) belong here too; secret values
# never do (terraform/README.md, "Secrets").

env                  = "dev"
daily_llm_budget_usd = 10
deletion_protection  = false
firestore_pitr       = false

# The module's sizing as is: every service scales to zero.
service_sizing = {}

# Vault key generations, the encrypting one first (rotation: terraform/README.md).
vault_key_generations = ["k1"]

# This environment's flags file (stage of the promotion ladder: terraform/flags/, docs/ROLLOUT.md).
flags_file = "../flags/dev.json"
