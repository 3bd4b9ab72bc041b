"""``CHARTER_CONTEXT_SOURCES_OFF``: a context that has lost a source (the local stack's forgetful
candidate for the recall gate). The source is not read, is recorded as skipped, and nothing in
the prompt says it is missing; a cloud environment refuses the setting."""

from __future__ import annotations

import pytest
from context_fakes import context_input, seed_org

from shared_lib.context import ContextBuilder, ContextConfig
from shared_lib.errors import ConfigError
from shared_lib.settings import Settings


def build(store, config):
    return ContextBuilder(config).build(context_input(store, "さっきの打ち合わせの件、覚えてる？"))


def test_a_switched_off_history_is_not_read_and_not_shown(memory_store):
    # GIVEN a conversation with history
    seed_org(memory_store)
    assert "【直近の会話】" in build(memory_store, ContextConfig(token_budget=5000)).rendered
    # WHEN the context's history sources are switched off
    config = ContextConfig.from_settings(
        Settings.from_env({"CHARTER_ENV": "local", "CHARTER_CONTEXT_SOURCES_OFF": "recent_messages, summary"})
    )
    built = build(memory_store, config)
    # THEN the prompt carries no history, the sources are recorded skipped, and the turn is not "degraded"
    assert config.sources_off == ("recent_messages", "summary")
    assert "【直近の会話】" not in built.rendered and "過去の発言" not in built.rendered
    assert {n: (built.records[n].status, built.records[n].error) for n in ("recent_messages", "summary")} == {
        "recent_messages": ("skipped", "switched off"),
        "summary": ("skipped", "switched off"),
    }
    assert built.degraded == [] and "recent_messages" not in built.values
    # AND the other sources are read as before
    assert built.records["user"].status == "ok"


def test_an_unknown_source_name_is_refused_naming_the_sources():
    with pytest.raises(ConfigError, match=r"unknown sources: \['recent_message'\].*recent_messages"):
        ContextConfig(sources_off=("recent_message",))


@pytest.mark.parametrize("env", ["dev", "stg", "prod"])
def test_a_cloud_environment_refuses_the_setting(env):
    with pytest.raises(ConfigError, match="CHARTER_CONTEXT_SOURCES_OFF"):
        Settings.from_env(
            {"CHARTER_ENV": env, "CHARTER_PROJECT": "p", "CHARTER_CONTEXT_SOURCES_OFF": "recent_messages"}
        )
