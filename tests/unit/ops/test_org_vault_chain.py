"""The organisation's vault key through the whole in-process chain (issue 36): with the deployment's
``CHARTER_VAULT_KEY`` (rotated: a new key in front of the old), a turn that keeps a phone number
and an address leaves every sealed value of the store — the turn's vault, the history, the memory,
its chunks and its event episode — under the organisation's derived key: its cipher opens each,
neither deployment key alone nor another organisation's cipher opens any."""

from __future__ import annotations

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from ops_fakes import ORG, make_runtime, send

from shared_lib.privacy.sealing import SEALED_FIELD

NEW, OLD = Fernet.generate_key(), Fernet.generate_key()
MOBILE, MAIL = "090-4455-6677", "k.ito@ito-shoji.co.jp"


def sealed_values(doc: dict) -> list[str]:
    sealed = doc.get(SEALED_FIELD)
    entries = sealed.values() if isinstance(sealed, dict) else []
    found = [t for each in entries if isinstance(each, list) for t in each if isinstance(t, str)]
    return [*found, *([doc["ciphertext"]] if isinstance(doc.get("ciphertext"), str) else [])]


def opens(cipher: Fernet | MultiFernet, token: str) -> bool:
    try:
        cipher.decrypt(token.encode())
    except InvalidToken:
        return False
    return True


def test_a_kept_number_is_sealed_everywhere_under_the_organisations_key(scripted_llm, clock):
    # GIVEN a runtime with the deployment's keys (rotated: the new one in front of the old)
    rt = make_runtime(
        llm=scripted_llm, clock=clock, env={"CHARTER_VAULT_KEY": f"{NEW.decode()},{OLD.decode()}"}
    )
    # WHEN 鈴木 asks the assistant to keep a client's mobile and address
    send(rt, f"覚えておいて：伊藤商事の伊藤さんの携帯は{MOBILE}、メールは {MAIL} です🙏")
    # THEN the store holds sealed values in the turn's vault, the history and the memory
    sealed = {
        p: t for p, d in rt.store.dump().items() if p.startswith(f"orgs/{ORG}/") and (t := sealed_values(d))
    }
    kinds = {p.split("/")[-2] for p in sealed}
    assert {"vaults", "memories", "memory_chunks", "messages", "episodes"} <= kinds, kinds
    # AND the organisation's cipher opens every one of them
    mine = rt.cipher(ORG)
    assert mine is not None
    assert [p for p, tokens in sealed.items() if not all(opens(mine, t) for t in tokens)] == []
    # AND neither deployment key alone, nor another organisation's cipher, opens any
    others = [Fernet(NEW), Fernet(OLD), rt.cipher("globex")]
    assert [p for p, tokens in sealed.items() for o in others if o and any(opens(o, t) for t in tokens)] == []
