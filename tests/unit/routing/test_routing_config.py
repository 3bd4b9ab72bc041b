"""``config/routing.json`` is data validated at load: a bad regular expression, an unknown route,
a rule without an example or a duplicate id is a ``ConfigError`` that says where."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from shared_lib.errors import ConfigError
from shared_lib.routing.config import ROUTING_FILE, load_routing_config, parse_routing_config
from shared_lib.routing.model import Route
from shared_lib.wiring.features import tool_registry
from tests.conftest import configure_from_env

DATA: dict[str, Any] = json.loads(ROUTING_FILE.read_text(encoding="utf-8"))


def broken(change: Any) -> dict[str, Any]:
    data = copy.deepcopy(DATA)
    change(data)
    return data


def test_the_packaged_file_loads_with_the_seed_thresholds_and_announcements():
    cfg = load_routing_config()
    assert (cfg.classifier.min_confidence, cfg.classifier.min_confidence_for_code) == (0.6, 0.8)
    assert cfg.announcements[Route.CODE] == "コーディングするウル🐺" and Route.CHAT not in cfg.announcements


@pytest.mark.parametrize(
    "change, where",
    [
        (
            lambda d: d["rules"][0]["when"][0].update(regex="(unclosed"),
            r"rules\.0\.when\.0.*invalid regular expression",
        ),
        (lambda d: d["rules"][0].update(route="SUMMARIZE"), r"rules\.0\.route"),
        (lambda d: d["rules"][0].update(examples=[]), r"rules\.0\.examples"),
        (lambda d: d["rules"][1].update(id=d["rules"][0]["id"]), "defined twice"),
        (lambda d: d["rules"][0]["when"][0].update(keywords=["x"]), "exactly one of"),
        (lambda d: d["rules"][0]["when"][0].update(at_least=0), "at_least"),
        (lambda d: d["rules"][0].update(colour="red"), "colour"),
        (lambda d: d["classifier"].update(min_confidence=1.5), "min_confidence"),
        (lambda d: d["classifier"].update(min_confidence_for_code=0.5), "min_confidence_for_code"),
        (lambda d: d["announcements"].update(SUMMARIZE="まとめるね。"), "announcements"),
        (lambda d: d["profiles"].pop("OPS"), "routes without a profile: OPS"),
        (lambda d: d["profiles"]["CODE"].update(model="opus"), r"profiles\.CODE\.model"),
        (lambda d: d["profiles"]["ANALYZE"].update(tools=[]), r"profiles\.ANALYZE\.tools"),
        (lambda d: d["profiles"]["ANALYZE"].update(tools="some"), r"profiles\.ANALYZE\.tools"),
        (lambda d: d["profiles"]["PLAN"].update(cloud="maybe"), r"profiles\.PLAN\.cloud"),
        (lambda d: d["profiles"].update(SUMMARIZE={"tools": "all"}), r"profiles\.SUMMARIZE"),
    ],
)
def test_a_broken_configuration_is_a_config_error_that_says_where(change, where):
    with pytest.raises(ConfigError, match=where):
        parse_routing_config(broken(change))


def test_a_file_that_is_not_json_is_a_config_error(tmp_path):
    path = tmp_path / "routing.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(ConfigError, match="routing file"):
        load_routing_config(path)


def test_a_file_with_a_bad_regex_is_a_config_error_at_load(tmp_path):
    path = tmp_path / "routing.json"
    path.write_text(
        json.dumps(broken(lambda d: d["rules"][2]["when"][0].update(regex="[a-"))), encoding="utf-8"
    )
    with pytest.raises(ConfigError, match=str(path)):
        load_routing_config(path)


def test_charter_routing_names_another_file(tmp_path, monkeypatch):
    path = tmp_path / "routing.json"
    data = broken(lambda d: d["classifier"].update(min_confidence=0.7))
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    monkeypatch.setenv("CHARTER_ROUTING", str(path))
    configure_from_env()
    assert load_routing_config().classifier.min_confidence == 0.7


def test_every_profile_names_only_tools_the_registry_has():
    # A misspelt tool would silently never be offered: the packaged file names registry tools only.
    names = set(tool_registry().names())
    cfg = load_routing_config()
    for route, profile in cfg.profiles.items():
        listed = [] if profile.tools == "all" else profile.tools
        assert set(listed) <= names, (route, sorted(set(listed) - names))


def test_read_only_routes_offer_only_tools_that_read():
    # ANALYZE and RESEARCH (seed 003: extraction, aggregation, investigation) never write.
    registry = tool_registry()
    cfg = load_routing_config()
    for route in (Route.ANALYZE, Route.RESEARCH):
        tools = cfg.profiles[route].tools
        assert tools != "all" and all(registry.get(t).effect_kind == "read" for t in tools), route
