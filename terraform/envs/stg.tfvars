# stg: staging. Production shape at low scale; every change rolls here first, shadow mode is
# rehearsed here. Used with stg.gcs.tfbackend; reviewed like code. Non-secret settings of this
# environment (alert_email, admin_invoker_members, notification_channel_ids) belong here too;
# secret values never do (terraform/README.md, "Secrets").

env                  = "stg"
daily_llm_budget_usd = 20
deletion_protection  = true
firestore_pitr       = false

# The module's sizing as is: every service scales to zero.
service_sizing = {}

# Vault key generations, the encrypting one first (rotation: terraform/README.md).
vault_key_generations = ["k1"]

# This environment's flags file (stage of the promotion ladder: terraform/flags/, docs/ROLLOUT.md).
flags_file = "../flags/stg.json"
