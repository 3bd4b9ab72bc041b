"""The organisation's vault key (issue 36): each organisation seals with a key derived from the
deployment's by HKDF, so what one organisation keeps does not open with another's cipher, what
was sealed before keys were per organisation still opens, and nothing new is sealed with the bare
deployment key."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet, InvalidToken

from shared_lib.brain.vault import org_vault, vault_cipher
from shared_lib.errors import ConfigError
from shared_lib.privacy.org_vault import OrgVault, derive_org_key
from shared_lib.privacy.sealing import SEALED_FIELD, destroyed, seal, unseal

ACME, GLOBEX = "acme", "globex-株式会社"
MEMO = {
    "content": "佐藤さんの携帯は０９０－８７６５－４３２１、メールは sato.k@example.co.jp やで📱",
    "category": "person",
    "user_id": "u-suzuki",
}


def keys(n: int = 1) -> list[bytes]:
    return [Fernet.generate_key() for _ in range(n)]


def test_each_organisation_has_its_own_key_derived_the_same_in_every_process() -> None:
    # GIVEN the deployment's key
    (key,) = keys()
    # WHEN two organisations' keys are derived, twice (as the brain and the executor each do)
    acme, again, globex = derive_org_key(key, ACME), derive_org_key(key, ACME), derive_org_key(key, GLOBEX)
    # THEN an organisation's key is stable, and no two organisations (or the deployment) share one
    assert acme == again
    assert len({acme, globex, key}) == 3
    Fernet(acme), Fernet(globex)  # valid Fernet keys
    # AND a token sealed in one process opens in another built from the same keys
    token = OrgVault([key]).for_org(ACME).encrypt(b"090-8765-4321")
    assert OrgVault([key]).for_org(ACME).decrypt(token) == b"090-8765-4321"


def test_a_memory_sealed_for_one_organisation_does_not_open_with_anothers_cipher() -> None:
    # GIVEN a memory with a full-width mobile and an address sealed for acme
    vault = OrgVault(keys())
    doc = seal(MEMO, vault.for_org(ACME))
    assert destroyed(doc) == [] and "sato.k@example.co.jp" not in str(doc)
    # WHEN globex's cipher opens it (a document copied across, a wrong org on a path)
    theirs, shown = unseal(doc, vault.for_org(GLOBEX))
    # THEN nothing opens: the placeholders stay and no value is listed
    assert shown == [] and theirs["content"] == "佐藤さんの携帯は[PHONE]、メールは [EMAIL] やで📱"
    # AND acme's cipher opens it to the values as typed
    ours, shown = unseal(doc, vault.for_org(ACME))
    assert ours["content"] == MEMO["content"]
    assert shown == ["０９０－８７６５－４３２１", "sato.k@example.co.jp"]


def test_new_seals_are_under_the_organisations_key_not_the_bare_deployment_key() -> None:
    # GIVEN the deployment's keys and acme's cipher from them
    deployment = keys()
    vault = OrgVault(deployment)
    token = seal(MEMO, vault.for_org(ACME))[SEALED_FIELD]["content"][0]
    # THEN the bare deployment key cannot open what acme sealed, acme's derived key can
    with pytest.raises(InvalidToken):
        Fernet(deployment[0]).decrypt(token.encode())
    with pytest.raises(InvalidToken):
        vault.deployment.decrypt(token.encode())
    assert (
        Fernet(derive_org_key(deployment[0], ACME)).decrypt(token.encode())
        == "０９０－８７６５－４３２１".encode()
    )


def test_what_was_sealed_before_keys_were_per_organisation_still_opens() -> None:
    # GIVEN a memory sealed with the deployment key itself (the vault before this change)
    deployment = keys()
    before = seal(MEMO, vault_cipher("prod", deployment[0].decode()))
    # WHEN the organisation's cipher reads it
    opened, shown = unseal(before, OrgVault(deployment).for_org(ACME))
    # THEN it opens (a read-only fallback), and a rewrite seals it under the organisation's key
    assert opened["content"] == MEMO["content"] and len(shown) == 2
    resealed = seal(opened, OrgVault(deployment).for_org(ACME))
    with pytest.raises(InvalidToken):
        Fernet(deployment[0]).decrypt(resealed[SEALED_FIELD]["content"][0].encode())


def test_a_rotated_deployment_key_re_derives_every_organisation_and_keeps_the_old_readable() -> None:
    # GIVEN acme's value sealed under the old deployment key's derivation
    old, new = keys(2)
    token = OrgVault([old]).for_org(ACME).encrypt(b"tanaka@example.jp")
    # WHEN the deployment key is rotated (the new key in front, the old one kept behind)
    rotated = OrgVault([new, old]).for_org(ACME)
    # THEN the old seal still opens, and a new one is sealed under the new key's derivation
    assert rotated.decrypt(token) == b"tanaka@example.jp"
    assert Fernet(derive_org_key(new, ACME)).decrypt(rotated.encrypt(b"x")) == b"x"
    # AND once the old key is dropped, what only it sealed no longer opens
    with pytest.raises(InvalidToken):
        OrgVault([new]).for_org(ACME).decrypt(token)


def test_an_organisations_cipher_is_derived_once_per_process() -> None:
    vault = OrgVault(keys())
    assert vault.for_org(ACME) is vault.for_org(ACME)
    assert vault.for_org(ACME) is not vault.for_org(GLOBEX)


def test_without_a_key_nothing_is_sealed_and_a_bad_key_refuses_to_start() -> None:
    # GIVEN production without CHARTER_VAULT_KEY: no vault, so nothing can be sealed (fail closed)
    assert org_vault("prod", None) is None and vault_cipher("prod", None) is None
    # AND demo/test/local have the development key, the same for every process
    dev, test = org_vault("local", None), org_vault("test", None)
    assert dev is not None and test is not None
    assert test.for_org(ACME).decrypt(dev.for_org(ACME).encrypt(b"v")) == b"v"
    # AND a key that is not a Fernet key is a configuration error
    with pytest.raises(ConfigError):
        org_vault("prod", "not-a-key")
    with pytest.raises(ValueError):
        OrgVault(keys()).for_org("")
