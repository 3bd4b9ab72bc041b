"""Fail closed in the cloud (issue 33): an unset or unknown environment never starts a served
function, Cloud Run (``K_SERVICE``) needs dev/stg/prod, and nothing local is taken unless a
developer's stack said ``CHARTER_ENV`` itself."""

from __future__ import annotations

import pytest

from shared_lib.errors import ConfigError
from shared_lib.settings import Settings, deploy_contract
from shared_lib.wiring import push
from shared_lib.wiring.composition import check_startup

COMPLETE_PROD = {name: "x" for name in deploy_contract("ingress")} | {
    "CHARTER_ENV": "prod",
    "FUNCTION_TARGET": "ingress",
    "CHARTER_STORE": "firestore",
    "CHARTER_BUS": "pubsub",
    "CHARTER_LOG_JSON": "1",
    "THREADS": "8",
    "CHARTER_TRACE_EXPORTER": "cloud_trace",
    "CHARTER_TRACE_SAMPLE_RATIO": "1",
    "CHARTER_VAULT_KEY": "x",
}


@pytest.mark.parametrize("environment", [None, "local", "test", "demo", "LOCAL"])
def test_cloud_run_refuses_an_unset_or_local_environment(environment):
    # GIVEN a process Cloud Run serves (it sets K_SERVICE) WHEN CHARTER_ENV is unset or local
    environ = {"K_SERVICE": "charter-ingress"} | ({"CHARTER_ENV": environment} if environment else {})
    # THEN the settings refuse, naming the service
    with pytest.raises(ConfigError, match=r"charter-ingress.*refusing to start"):
        Settings.from_env(environ)


@pytest.mark.parametrize("environment", ["production", "prd", "staging", "lokal", "dev2"])
def test_an_unknown_environment_name_refuses_anywhere(environment):
    with pytest.raises(ConfigError, match="CHARTER_ENV"):
        Settings.from_env({"CHARTER_ENV": environment, "K_SERVICE": "charter-admin"})
    with pytest.raises(ConfigError, match="CHARTER_ENV"):
        Settings.from_env({"CHARTER_ENV": environment})


def test_cloud_run_with_a_real_environment_starts():
    settings = Settings.from_env(COMPLETE_PROD | {"K_SERVICE": "charter-ingress"})
    assert settings.cloud and not settings.explicit_local


@pytest.mark.parametrize("environ", [{}, {"CHARTER_ENV": ""}])
def test_a_served_function_refuses_an_unset_environment(environ):
    # GIVEN no CHARTER_ENV (functions-framework or gunicorn started by hand) THEN it does not start
    with pytest.raises(ConfigError, match="CHARTER_ENV is not set"):
        Settings.from_env(environ).served()
    with pytest.raises(ConfigError, match="CHARTER_ENV is not set"):
        check_startup(environ)


def test_the_process_runtime_of_a_served_function_refuses_an_unset_environment(monkeypatch):
    # GIVEN the process environment of a served function without CHARTER_ENV
    monkeypatch.delenv("CHARTER_ENV", raising=False)
    monkeypatch.setenv("CHARTER_LLM", "none")
    monkeypatch.setattr(push, "_runtime", None)
    # WHEN its first request builds the runtime THEN it refuses
    with pytest.raises(ConfigError, match="CHARTER_ENV is not set"):
        push.get_runtime()


@pytest.mark.parametrize("environment", ["local", "test", "demo", " Local "])
def test_a_developers_stack_that_says_local_is_explicitly_local(environment):
    settings = Settings.from_env({"CHARTER_ENV": environment})
    assert settings.explicit_local and settings.served() is settings


def test_a_developers_command_may_default_to_local_but_it_is_not_explicit():
    # the CLI and the demo's embedded store keep working without CHARTER_ENV...
    settings = Settings.from_env({})
    assert settings.env == "local" and settings.store == "memory"
    # ...but nothing that trusts a laptop trusts it
    assert not settings.env_given and not settings.explicit_local
