"""Operators by identity (issue 33): the credential ``charter operators add`` prints is stored
hashed and names its person; an unset environment opens nothing; the dashboard's session says
who the operator is."""

from __future__ import annotations

import hashlib

import pytest
from admin_fakes import FakeVerifier, client
from ops_fakes import ORG, make_runtime

from shared_lib.admin.app import gate_of
from shared_lib.admin.identity import TOKEN_HEADER, add_identity
from shared_lib.cli import main
from shared_lib.cli import operators as operators_cli
from shared_lib.wiring.composition import build_runtime


@pytest.fixture
def rt(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    runtime = make_runtime()
    monkeypatch.setattr(operators_cli, "runtime_for", lambda _args: runtime)
    return runtime


def test_a_credential_is_printed_once_stored_hashed_and_acts_as_its_person(rt, capsys):
    # GIVEN someone with store access makes a credential for the demo's CEO
    assert main(["operators", "add", "--org", ORG, "--person", "u-kazu", "--by", "佐藤（情シス）"]) == 0
    token = capsys.readouterr().out.strip()
    # THEN the store has its SHA-256 only, never the token
    docs = rt.store.query("operator_credentials")
    assert [p.rsplit("/", 1)[-1] for p, _ in docs] == [hashlib.sha256(token.encode()).hexdigest()]
    assert token not in repr(docs)
    # AND in the cloud it reads and acts as u-kazu of the demo organisation, nothing else
    c = client(rt, local=False)
    session = c.get("/api/session", headers={TOKEN_HEADER: token}).get_json()
    assert session["operator"] == {"org": ORG, "person": "u-kazu", "via": "credential", "platform": False}
    assert (
        c.get("/api/turns", query_string={"org": "globex"}, headers={TOKEN_HEADER: token}).status_code == 403
    )


def test_a_person_outside_the_directory_gets_no_credential(rt, capsys):
    assert main(["operators", "add", "--org", ORG, "--person", "u-nobody"]) == 2
    assert "not in the directory" in capsys.readouterr().err
    assert rt.store.query("operator_credentials") == []


def test_a_revoked_credential_opens_nothing(rt, capsys):
    main(["operators", "add", "--org", ORG, "--person", "u-kazu"])
    token = capsys.readouterr().out.strip()
    main(["operators", "list", "--org", ORG, "--json"])
    listed = capsys.readouterr().out
    assert token not in listed
    prefix = hashlib.sha256(token.encode()).hexdigest()[:12]
    assert main(["operators", "revoke", prefix]) == 0
    r = client(rt, local=False).get("/api/flags", headers={TOKEN_HEADER: token})
    assert r.status_code == 401


def test_an_iam_identity_is_the_verified_email_never_an_unverified_one(rt):
    # GIVEN ops@acme's Google identity mapped to the CEO, and a verifier that knows one token
    add_identity(rt.store, "ops@acme.example", ORG, "u-kazu")
    verifier = FakeVerifier({"a.b.c": "OPS@acme.example"})
    c = client(rt, local=False, verifier=verifier)
    # WHEN the verified token comes THEN it acts as the CEO; an unverified one is 401
    good = c.get("/api/session", headers={"Authorization": "Bearer a.b.c"}).get_json()
    assert good["operator"]["person"] == "u-kazu" and good["operator"]["via"] == "iam"
    assert c.get("/api/flags", headers={"Authorization": "Bearer x.y.z"}).status_code == 401


def test_an_unset_environment_opens_neither_the_dashboard_nor_the_tasks():
    # GIVEN a runtime whose CHARTER_ENV was never said (a developer command's default)
    rt = build_runtime({"CHARTER_LLM": "none", "CHARTER_CHANNELS": "recording"}, llm=None)
    gate = gate_of(rt, FakeVerifier())
    # THEN its admin door is the cloud's: reads and tasks need an identity
    assert not gate.local
    assert gate.check([], control=False).status == 401
    assert gate.check_task([]).status == 401
