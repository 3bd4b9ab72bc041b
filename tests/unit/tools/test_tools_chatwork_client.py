"""The ChatWork task API client against the fake (in-process transport): retries, waits,
errors, and the backend chosen from the environment."""

from __future__ import annotations

import pytest

from infra.fake_chatwork import ChatWorkTasksApp, Fault
from shared_lib.errors import ConfigError
from shared_lib.settings import Settings
from shared_lib.tools.chatwork_api import ChatWorkAPIError, ChatWorkClient
from shared_lib.tools.chatwork_tasks import ChatWorkTaskBackend
from shared_lib.tools.task_backend import StoreTaskBackend, build_task_backend

TOKEN = "t0ken"


@pytest.fixture
def api():
    return ChatWorkTasksApp(TOKEN, clock=lambda: 1_000_000.0)


@pytest.fixture
def sleeps():
    return []


def client(api, sleeps, token=TOKEN, **kw):
    return ChatWorkClient(
        "https://chatwork.test/v2",
        token,
        transport=api.transport(),
        sleep=sleeps.append,
        wall_clock=lambda: 1_000_000.0,
        **kw,
    )


def test_given_an_empty_room_when_listed_then_the_204_is_an_empty_list(api, sleeps):
    assert client(api, sleeps).list_tasks("9") == []
    assert api.calls()[0]["status"] == 204


def test_given_a_429_with_a_reset_time_then_the_client_waits_until_then(api, sleeps):
    api.inject(Fault(429, retry_after=7))
    assert client(api, sleeps).list_tasks("9") == []
    assert sleeps == [7.0]


def test_given_a_very_long_reset_then_the_wait_is_capped(api, sleeps):
    api.inject(Fault(429, retry_after=3600))
    client(api, sleeps, max_wait=30).list_tasks("9")
    assert sleeps == [30]


@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_given_a_transient_5xx_then_retried_with_backoff(api, sleeps, status):
    api.inject(Fault(status, times=2))
    client(api, sleeps).list_tasks("9")
    assert len(sleeps) == 2 and all(0 <= s <= 8 for s in sleeps)


def test_given_retries_exhausted_then_the_last_error_is_raised(api, sleeps):
    api.inject(Fault(503, times=10))
    with pytest.raises(ChatWorkAPIError) as err:
        client(api, sleeps, max_attempts=3).list_tasks("9")
    assert err.value.status == 503 and len(api.calls()) == 3


def test_given_a_wrong_token_then_401_is_not_retried(api, sleeps):
    with pytest.raises(ChatWorkAPIError) as err:
        client(api, sleeps, token="wrong").list_tasks("9")
    assert err.value.status == 401 and sleeps == []


def test_given_a_bad_form_then_400_is_not_retried(api, sleeps):
    with pytest.raises(ChatWorkAPIError) as err:
        client(api, sleeps).create_task("9", body="x", to_ids=["not-a-number"])
    assert err.value.status == 400 and len(api.calls()) == 1


def test_given_an_ambiguous_failure_on_create_then_recheck_runs_before_the_retry(api, sleeps):
    api.inject(
        Fault(500, method="POST")
    )  # failed without effect: the recheck finds nothing, the retry creates
    rechecks = []
    ids = client(api, sleeps).create_task("9", body="x", to_ids=["5"], recheck=lambda: rechecks.append(1))
    assert ids == ["1"] and rechecks == [1] and len(api.creates()) == 1


def test_given_a_429_on_create_then_no_recheck_is_needed(api, sleeps):
    api.inject(Fault(429, method="POST"))
    rechecks = []
    client(api, sleeps).create_task("9", body="x", to_ids=["5"], recheck=lambda: rechecks.append(1))
    assert rechecks == []


def task_backend_from_env(env, store):
    return build_task_backend(Settings.from_env({"CHARTER_ENV": "test", **env}), store)


def test_given_the_environment_then_the_backend_is_chosen(memory_store):
    assert isinstance(task_backend_from_env({}, memory_store), StoreTaskBackend)
    chosen = task_backend_from_env(
        {
            "CHARTER_TASK_BACKEND": "chatwork",
            "CHATWORK_API_TOKEN": "x",
            "CHATWORK_API_BASE": "http://127.0.0.1:1/v2",
        },
        memory_store,
    )
    assert isinstance(chosen, ChatWorkTaskBackend) and chosen.external
    with pytest.raises(ConfigError, match="CHATWORK_API_TOKEN"):
        task_backend_from_env({"CHARTER_TASK_BACKEND": "chatwork"}, memory_store)
    with pytest.raises(ConfigError):
        task_backend_from_env({"CHARTER_TASK_BACKEND": "jira"}, memory_store)
