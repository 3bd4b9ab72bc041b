"""The catalogue of collections (``shared_lib/config/collections.json``) against itself, the code
and Terraform: templates parse, owners exist, and every expiring collection has its TTL policy."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
from charter_static_checks import catalogue_ttl_policies, load_collections, terraform_ttl_policies

from shared_lib import collections

ENTRIES = load_collections(Path(__file__).resolve().parents[2])


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e["name"])
def test_every_path_template_parses_and_builds_a_path_of_its_own_collection(entry: dict[str, str]) -> None:
    # GIVEN a catalogue entry WHEN its template is filled with sample ids
    collection = collections.CATALOGUE[entry["name"]]
    values = {name: f"x-{name}" for name in re.findall(r"\{(\w+)\}", entry["path"])}
    built = collections.path(entry["name"], **values)
    # THEN the path is a document path that maps back to this entry and no other
    assert len(built.split("/")) % 2 == 0
    assert collections.of_path(built) == collection
    assert [c.name for c in collections.CATALOGUE.values() if c.matches(built)] == [entry["name"]]


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e["name"])
def test_every_owner_is_a_module_of_the_product(entry: dict[str, str]) -> None:
    assert entry["owner"].startswith("shared_lib.")
    assert importlib.util.find_spec(entry["owner"]) is not None, entry["owner"]


def test_the_product_reads_the_same_ttl_policies_as_the_file(repo_root: Path) -> None:
    assert collections.ttl_policies() == catalogue_ttl_policies(repo_root)


def test_every_collection_with_a_ttl_field_has_a_ttl_policy_in_terraform(repo_root: Path) -> None:
    # GIVEN the TTL policies Terraform declares (its for_each evaluated by terraform console)
    declared, problems = terraform_ttl_policies(repo_root)
    assert problems == []
    # THEN each expiring collection's group has a policy, on the collection's own TTL field
    expiring = [c for c in collections.CATALOGUE.values() if c.ttl_field is not None]
    assert {c.name: declared.get(c.group) for c in expiring} == {c.name: c.ttl_field for c in expiring}
    # AND Terraform declares no policy the catalogue does not ask for
    assert set(declared) == {c.group for c in expiring}


def test_the_collections_that_used_to_expire_nowhere_now_do() -> None:
    groups = {c.group for c in collections.CATALOGUE.values() if c.ttl_field}
    assert {"vaults", "blobs", "webhook_events", "shadow_comparisons", "shadow_sides"} <= groups
    assert collections.CATALOGUE["rollout_guard_events"].ttl_field == "expires_at"
    assert collections.CATALOGUE["rollout_guard_days"].ttl_field == "expires_at"
