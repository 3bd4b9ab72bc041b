# TTL policies come from the catalogue of collections (shared_lib/config/collections.json): the
# code builds its paths from the same file, so a collection that carries an expiry field is
# declared once. This file holds only locals, so the static tests can evaluate it on its own.

locals {
  catalogue = jsondecode(file("${path.module}/../../../shared_lib/config/collections.json"))

  # Collection group (the path template's last collection id) => its collections' TTL fields.
  ttl_fields_by_group = {
    for c in local.catalogue.collections :
    element(split("/", c.path), length(split("/", c.path)) - 2) => c.ttl_field...
    if c.ttl_field != null
  }

  # A TTL policy is per collection group: one() refuses a group whose collections disagree.
  ttl_policies = { for group, fields in local.ttl_fields_by_group : group => one(distinct(fields)) }
}
