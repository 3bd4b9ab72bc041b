"""ChannelSecrets from the environment (fail closed outside local) and IngressConfig loading."""

from __future__ import annotations

import json

import pytest

from shared_lib.channels import DEFAULT_LOCAL_SECRETS, ChannelSecrets, IngressConfig
from shared_lib.errors import ConfigError

WEBHOOK_VARIABLES = [
    "CHATWORK_WEBHOOK_TOKEN",
    "LINE_CHANNEL_SECRET",
    "SLACK_SIGNING_SECRET",
    "HTTP_WEBHOOK_SECRET",
]


@pytest.mark.parametrize("environment", ["local", "test", "demo", "LOCAL", " Demo "])
def test_local_environments_fall_back_to_documented_defaults(environment):
    # GIVEN a laptop, test or demo environment that says so, without any secret set
    secrets = ChannelSecrets.from_env({"CHARTER_ENV": environment})
    # THEN every channel has its documented local default
    assert secrets.is_local
    assert secrets.webhook_secrets("slack") == (DEFAULT_LOCAL_SECRETS["SLACK_SIGNING_SECRET"],)
    assert secrets.webhook_secrets("chatwork") == (DEFAULT_LOCAL_SECRETS["CHATWORK_WEBHOOK_TOKEN"],)
    assert secrets.slack_bot_token == DEFAULT_LOCAL_SECRETS["SLACK_BOT_TOKEN"]


@pytest.mark.parametrize("environ", [{}, {"CHARTER_ENV": ""}])
def test_an_unset_environment_takes_no_published_default(environ):
    # GIVEN no CHARTER_ENV at all (a service someone forgot to configure), no secret set
    secrets = ChannelSecrets.from_env(environ)
    # THEN it is not a laptop: no channel has a secret, no shared HTTP secret acts for any org
    assert not secrets.is_local
    assert all(secrets.webhook_secrets(c) == () for c in ("chatwork", "line", "slack", "http"))
    assert dict(secrets.http_tenants) == {} and secrets.slack_bot_token is None


def test_the_published_defaults_are_dropped_when_the_environment_is_unset():
    # GIVEN no CHARTER_ENV and the published local defaults set by hand (a copied .env)
    env = {name: DEFAULT_LOCAL_SECRETS[name] for name in [*WEBHOOK_VARIABLES, "HTTP_WEBHOOK_TENANTS"]}
    secrets = ChannelSecrets.from_env(env)
    # THEN none of them verifies anything
    assert all(secrets.webhook_secrets(c) == () for c in ("chatwork", "line", "slack", "http"))
    assert dict(secrets.http_tenants) == {}


@pytest.mark.parametrize("environment", ["local", "test", "demo"])
def test_under_cloud_run_a_local_environment_refuses_instead_of_taking_defaults(environment):
    # GIVEN a process Cloud Run serves (K_SERVICE) that says it is local
    with pytest.raises(ConfigError, match="refusing to start"):
        ChannelSecrets.from_env({"CHARTER_ENV": environment, "K_SERVICE": "charter-ingress"})


@pytest.mark.parametrize("environment", ["production", "staging", "lokal"])
def test_an_unknown_environment_is_a_config_error_not_a_laptop(environment):
    # a typo never falls back to the published local secrets: the process refuses to start
    with pytest.raises(ConfigError, match="CHARTER_ENV"):
        ChannelSecrets.from_env({"CHARTER_ENV": environment})


@pytest.mark.parametrize("environment", ["prod", "stg", "dev", "PROD "])
def test_deployed_environments_never_use_defaults(environment):
    # GIVEN a deployed environment without secrets
    secrets = ChannelSecrets.from_env({"CHARTER_ENV": environment})
    # THEN nothing is configured: every channel fails closed
    assert not secrets.is_local
    assert all(secrets.webhook_secrets(c) == () for c in ("chatwork", "line", "slack", "http"))
    assert (secrets.chatwork_api_token, secrets.line_channel_access_token, secrets.slack_bot_token) == (
        None,
    ) * 3


def test_published_defaults_are_dropped_in_production():
    # GIVEN production configured (by mistake) with the published local defaults
    env = {"CHARTER_ENV": "prod"} | {name: DEFAULT_LOCAL_SECRETS[name] for name in WEBHOOK_VARIABLES}
    env["SLACK_SIGNING_SECRET"] += ",real-secret"
    secrets = ChannelSecrets.from_env(env)
    # THEN only the real secret survives
    assert secrets.webhook_secrets("slack") == ("real-secret",)
    assert secrets.webhook_secrets("line") == ()


def test_comma_separated_secrets_are_all_active():
    secrets = ChannelSecrets.from_env({"CHARTER_ENV": "prod", "LINE_CHANNEL_SECRET": " new , old ,,"})
    assert secrets.webhook_secrets("line") == ("new", "old")
    assert secrets.webhook_secrets("unknown") == ()


def test_api_bases_default_to_providers_and_can_point_at_fakes():
    assert ChannelSecrets.from_env({}).chatwork_api_base == "https://api.chatwork.com/v2"
    assert ChannelSecrets.from_env({}).line_api_base == "https://api.line.me"
    assert ChannelSecrets.from_env({}).slack_api_base == "https://slack.com/api"
    secrets = ChannelSecrets.from_env(
        {
            "SLACK_API_BASE": "http://127.0.0.1:9/slack/api/",
            "CHARTER_HTTP_REPLY_URL": "http://127.0.0.1:9/http/reply",
            "CHARTER_HTTP_CALLBACK_HOSTS": "Hooks.Example.com, a.b",
        }
    )
    assert secrets.slack_api_base == "http://127.0.0.1:9/slack/api"
    assert secrets.http_reply_url == "http://127.0.0.1:9/http/reply"
    assert secrets.http_callback_hosts == ("hooks.example.com", "a.b")


@pytest.mark.parametrize("variable", ["SLACK_API_BASE", "CHARTER_HTTP_REPLY_URL"])
def test_a_base_url_that_is_not_http_is_a_config_error(variable):
    with pytest.raises(ConfigError, match=variable):
        ChannelSecrets.from_env({variable: "ftp://example.com"})


def test_secrets_never_appear_in_repr():
    text = repr(
        ChannelSecrets.from_env({"SLACK_SIGNING_SECRET": "s3cr3t-value", "SLACK_BOT_TOKEN": "xoxb-t0ken"})
    )
    assert "s3cr3t-value" not in text and "xoxb-t0ken" not in text


# ------------------------------------------------------------------------- IngressConfig


def test_ingress_config_defaults_without_the_variable():
    config = IngressConfig.from_env({})
    assert (config.max_body_bytes, config.default_org, config.answer_only_when_addressed) == (
        262144,
        "default",
        True,
    )


def test_ingress_config_from_inline_json_and_from_a_file(tmp_path):
    document = {
        "default_org": "acme",
        "orgs": {"slack_teams": {"T1": "globex"}},
        "bots": {"slack_user_id": "UBOT"},
        "room_overrides": {"slack": {"C1": False}},
    }
    inline = IngressConfig.from_env({"CHARTER_INGRESS_CONFIG": json.dumps(document)})
    path = tmp_path / "ingress.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    from_file = IngressConfig.from_env({"CHARTER_INGRESS_CONFIG": str(path)})
    assert inline == from_file
    assert inline.orgs.slack_teams == {"T1": "globex"}
    assert inline.only_when_addressed("slack", "C1") is False
    assert inline.only_when_addressed("slack", "C2") is True
    assert inline.only_when_addressed("line", "C1") is True


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("{not json", "inline JSON"),
        ('{"max_body_bytes": 0}', "max_body_bytes"),
        ('{"default_org": "a/b"}', "default_org"),
        ('{"orgs": {"slack_teams": {"T1": ""}}}', "orgs.slack_teams.T1"),
        ('{"unknown_setting": 1}', "unknown_setting"),
        ('{"room_overrides": {"teams": {}}}', "room_overrides"),
        ("/nonexistent/ingress.json", "cannot read"),
    ],
)
def test_invalid_ingress_config_is_a_clear_error(raw, message):
    with pytest.raises(ConfigError, match="CHARTER_INGRESS_CONFIG") as info:
        IngressConfig.from_env({"CHARTER_INGRESS_CONFIG": raw})
    assert message in str(info.value)
