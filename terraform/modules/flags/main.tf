# The feature-flag document config/flags, written from the environment's own flags file
# (terraform/flags/<env>.json, named by flags_file in <env>.tfvars; validated by shared_lib's flags
# schema and the promotion ladder in the test suite). There is no default file: an environment that
# names none fails the plan rather than getting another environment's stage.
#
# Encoding: Firestore `fields` need typed values ({"stringValue": ...}, {"mapValue": ...}); turning
# arbitrary JSON into that form in HCL is fragile (numbers vs integers, empty lists, nulls). So the
# whole file is stored as ONE string field, `document_json`, which the product parses with the same
# schema. Beside it, the same shape shared_lib.flags.flags_store_doc writes for the local stack:
# `version` (the file's own "version", or its sha256 if it has none), `sha256` of the text (the
# reader rejects a document whose hash does not match) and `updated_by = "terraform"`.

locals {
  flags_file   = var.flags_file
  file_present = fileexists(local.flags_file)
  flags_text   = local.file_present ? file(local.flags_file) : ""
}

resource "google_firestore_document" "flags" {
  project     = var.project_id
  database    = var.database_name
  collection  = "config"
  document_id = "flags"

  fields = jsonencode({
    document_json = { stringValue = local.flags_text }
    version       = { stringValue = tostring(try(jsondecode(local.flags_text).version, sha256(local.flags_text))) }
    sha256        = { stringValue = sha256(local.flags_text) }
    updated_by    = { stringValue = "terraform" }
  })

  lifecycle {
    # Fail closed: never write an empty or broken flag document.
    precondition {
      condition     = local.file_present && can(jsondecode(local.flags_text))
      error_message = "The flags file ${local.flags_file} is missing or is not valid JSON."
    }
  }
}
