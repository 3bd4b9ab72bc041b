"""The peers configuration: data in, clear ``ConfigError``s out (``shared_lib.peers.config``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shared_lib.errors import ConfigError
from shared_lib.peers.config import PEERS_FILE, PeersConfig, load_peers
from shared_lib.ports import PURPOSES

TWO = {
    "peers": [
        {"name": "anthropic", "kind": "anthropic", "api_key_setting": "anthropic_api_key"},
        {
            "name": "ollama",
            "kind": "openai_compatible",
            "local": True,
            "base_url": "http://127.0.0.1:11434/v1",
        },
    ],
    "routing": {"classification": ["ollama"], "phrasing": ["ollama", "anthropic"]},
}


def test_the_shipped_default_is_one_cloud_anthropic_peer_for_every_purpose():
    config = load_peers(None)
    assert [(p.name, p.kind, p.local) for p in config.peers] == [("anthropic", "anthropic", False)]
    assert config.peers[0].base_url_setting == "anthropic_base_url"
    assert config.peers[0].api_key_setting == "anthropic_api_key"
    assert all([p.name for p in config.route(purpose)] == ["anthropic"] for purpose in PURPOSES)
    assert config.local_purposes() == frozenset()


def test_routing_by_purpose_and_the_unlisted_purposes_use_every_peer_in_order():
    config = PeersConfig.model_validate(TWO)
    assert [p.name for p in config.route("classification")] == ["ollama"]
    assert [p.name for p in config.route("phrasing")] == ["ollama", "anthropic"]
    assert [p.name for p in config.route("proposal")] == ["anthropic", "ollama"]
    assert config.purposes_of("anthropic") == ["proposal", "phrasing", "critique", "evaluation", "summary"]
    assert config.local_purposes() == frozenset(PURPOSES)  # the local peer is in every purpose's list


def test_inline_json_and_a_file_both_load(tmp_path: Path):
    inline = load_peers(json.dumps(TWO))
    path = tmp_path / "peers.json"
    path.write_text(json.dumps(TWO), encoding="utf-8")
    assert load_peers(str(path)) == inline == PeersConfig.model_validate(TWO)


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"routing": {"proposal": ["nobody"]}}, "unknown peer nobody"),
        ({"routing": {"translation": ["anthropic"]}}, "unknown purpose 'translation'"),
        ({"routing": {"proposal": []}}, "names no peer"),
        (
            {"peers": [{"name": "a", "kind": "anthropic"}, {"name": "a", "kind": "anthropic"}]},
            "duplicate peer name a",
        ),
        ({"peers": [{"name": "v", "kind": "vertex"}]}, "needs its region"),
        ({"peers": [{"name": "o", "kind": "openai_compatible", "local": True}]}, "needs its base_url"),
        ({"peers": [{"name": "x", "kind": "mistral"}]}, "kind"),
        (
            {"peers": [{"name": "a", "kind": "anthropic", "api_key_setting": "anthropic_base_url"}]},
            "no secret setting",
        ),
        ({"peers": [{"name": "a", "kind": "anthropic", "api_key": "sk-ant-123"}]}, "api_key"),
        ({"peers": []}, "peers"),
    ],
)
def test_a_bad_configuration_is_one_clear_config_error(patch: dict, message: str):
    data = {**TWO, "routing": {}, **patch}
    with pytest.raises(ConfigError, match=message) as caught:
        load_peers(json.dumps(data))
    assert str(caught.value).startswith("CHARTER_PEERS: ")


def test_a_missing_file_and_text_that_is_not_json_name_their_source(tmp_path: Path):
    with pytest.raises(ConfigError, match=r"cannot read .*nope\.json"):
        load_peers(str(tmp_path / "nope.json"))
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bad\.json: not JSON"):
        load_peers(str(bad))


def test_the_key_is_read_from_the_named_secret_setting_never_written_in_the_file():
    from shared_lib.settings import Settings

    spec = load_peers(None).peers[0]
    settings = Settings.from_env({"ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"})
    assert spec.api_key(settings) == "sk-test" and spec.resolved_base_url(settings) == "http://127.0.0.1:9"
    assert "sk-" not in PEERS_FILE.read_text(encoding="utf-8")
