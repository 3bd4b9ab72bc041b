"""Building paths from the catalogue of collections (``shared_lib.collections``)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from shared_lib import collections
from shared_lib.brain.vault import vault_path
from shared_lib.collections import Collection
from shared_lib.delivery.idempotency import claim_path
from shared_lib.tools.execution import receipt_path
from shared_lib.turn.envelope import Turn, blob_path
from shared_lib.turn.inbound import InboundMessage


def test_a_path_is_built_from_its_template() -> None:
    assert collections.path("idempotency", org="acme", id="T1-brain-0") == "orgs/acme/idempotency/T1-brain-0"
    assert collections.path("delivery_attempts", id="k1") == "delivery_attempts/k1"
    assert (
        collections.path("messages", org="acme", conversation="c1", id="m1")
        == "orgs/acme/conversations/c1/messages/m1"
    )
    assert collections.collection_path("messages", org="acme", conversation="c1") == (
        "orgs/acme/conversations/c1/messages"
    )


@pytest.mark.parametrize(
    "values",
    [
        {"org": "acme"},
        {"org": "acme", "id": "r1", "room": "x"},
        {"org": "a/b", "id": "r1"},
        {"org": "", "id": "r1"},
    ],
    ids=["missing", "unexpected", "slash", "empty"],
)
def test_a_path_refuses_missing_extra_or_unsafe_ids(values: dict[str, str]) -> None:
    with pytest.raises((KeyError, ValueError)):
        collections.path("receipts", **values)


def test_an_uncatalogued_path_belongs_to_no_collection() -> None:
    assert collections.of_path("orgs/acme/unknown/x") is None
    assert collections.of_path("orgs/acme/receipts/r1/extra/y") is None
    assert collections.of_path("rollout_guard/state/events/e1").name == "rollout_guard_events"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "template",
    ["orgs/{org}/receipts", "orgs/{org}/{kind}/{id}", "orgs/{org}/receipts/fixed", "orgs/{id}/receipts/{id}"],
)
def test_a_template_that_is_not_a_document_path_with_literal_collections_is_refused(template: str) -> None:
    with pytest.raises(ValidationError):
        Collection(name="x", path=template, owner="shared_lib.x", ttl_field=None, description="")


def test_the_path_builders_of_the_code_write_catalogued_collections() -> None:
    turn = Turn.from_inbound(
        InboundMessage(
            channel="http",
            org_id="acme",
            room_id="r1",
            user_id="u1",
            text="hi",
            message_id="m1",
            event_id="e1",
            received_at="2026-11-23T09:00:00Z",  # type: ignore[arg-type]
        )
    )
    built = {
        "idempotency": claim_path("acme", "T1", "brain", 0, shadow=True),
        "receipts": receipt_path("acme", "T1-0-0"),
        "vaults": vault_path("acme", "T1", shadow=True),
        "blobs": blob_path(turn, "brain"),
    }
    assert {name: collections.of_path(p).name for name, p in built.items()} == {n: n for n in built}  # type: ignore[union-attr]
    assert built["idempotency"] == "orgs/acme/idempotency/T1-brain-0-shadow"
    assert built["vaults"] == "orgs/acme/vaults/T1-shadow"
