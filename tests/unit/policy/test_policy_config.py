"""The policy is data: validated by a schema, the seed's values as defaults, a version that
changes with what decisions depend on; danger info merges registry and configuration."""

from __future__ import annotations

import json
import re

import pytest
from pydantic import BaseModel

from shared_lib.errors import ConfigError
from shared_lib.policy.config import load_policy_config, parse_policy_config
from shared_lib.policy.effective import Policy
from shared_lib.policy.guardian import evaluate
from shared_lib.policy.reasons import GUARDIAN_REASONS
from shared_lib.tools.registry import ToolRegistry, ToolSpec
from shared_lib.wiring.features import tool_registry
from tests.conftest import configure_from_env
from tests.unit.policy.policy_fakes import NOW, config, policy_data, tool_call


class _NoParams(BaseModel):
    pass


def spec(name: str, **kw) -> ToolSpec:
    return ToolSpec(name, f"{name}の説明", (), _NoParams, lambda p, ctx, txn: {}, **kw)


def test_the_packaged_policy_has_the_seed_defaults():
    cfg = load_policy_config()
    assert (cfg.confidence.too_low, cfg.confidence.low, cfg.confidence.medium) == (0.3, 0.5, 0.7)
    assert (cfg.parameters.amount_high, cfg.parameters.amount_very_high) == (100_000, 1_000_000)
    assert (cfg.parameters.recipients_many, cfg.parameters.recipients_many_content) == (3, 10)
    assert cfg.consistency.far_future_days == 365
    assert {k: (v.risk, v.action) for k, v in cfg.dangerous_operations.items()} == {
        "send_to_all": ("high", "confirm"),
        "delete_task": ("medium", "confirm"),
        "delete_goal": ("medium", "confirm"),
        "delete_memory": ("high", "confirm"),
        "change_permission": ("high", "block"),
        "send_confidential": ("critical", "block"),
    }
    # the seed's confidential words (§4.4.5) are each an attribute or a deal of the disclosure grammar
    grammar = cfg.security.disclosure
    assert grammar is not None
    words = [a.words for a in grammar.attributes] + [d.words for d in grammar.deals]
    for word in ["給与", "年収", "評価", "査定", "M&A", "買収"]:
        assert any(re.fullmatch(w, word) for w in words), word
    assert cfg.authorization.default_level == 2 and cfg.authorization.tool_levels["view_salary_info"] == 6
    assert (cfg.confirmation.session_ttl_minutes, cfg.confirmation.pending_ttl_minutes) == (30, 10)
    assert set(GUARDIAN_REASONS) <= set(cfg.messages)


@pytest.mark.parametrize(
    ("patch", "problem"),
    [
        (
            {"security": {"ng_patterns": [{"name": "bad", "pattern": "([unclosed"}]}},
            "invalid regular expression",
        ),
        ({"dangerous_operations": {"x": {"risk": "critical", "action": "confirm"}}}, "always blocked"),
        ({"confidence": {"too_low": 0.6, "low": 0.5, "medium": 0.7}}, "too_low <= low <= medium"),
        ({"timezone": "Mars/Olympus"}, "unknown timezone"),
        ({"parameters": {"amount_high": 2_000_000}}, "must not exceed"),
        ({"surprise": True}, "Extra inputs are not permitted"),
    ],
)
def test_an_invalid_policy_is_a_config_error_that_says_why(patch, problem):
    with pytest.raises(ConfigError, match=problem):
        config(**patch)


def test_the_department_scope_table_names_every_level():
    data = policy_data()
    data["authorization"]["department_scope"] = {"1": "own", "2": "own"}
    with pytest.raises(ConfigError, match="needs every level"):
        parse_policy_config(data)


def test_every_reason_code_needs_a_message():
    data = policy_data()
    del data["messages"]["danger.high"]
    with pytest.raises(ConfigError, match=r"danger\.high"):
        parse_policy_config(data)


def test_charter_policy_names_another_file(tmp_path, monkeypatch):
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(policy_data(confidence={"medium": 0.8})), encoding="utf-8")
    monkeypatch.setenv("CHARTER_POLICY", str(path))
    configure_from_env()
    assert load_policy_config().confidence.medium == 0.8


def test_the_version_follows_decisions_not_wording():
    registry = tool_registry()
    base = Policy.build(config(), registry).version
    assert Policy.build(config(), registry).version == base  # stable
    assert Policy.build(config(confidence={"medium": 0.8}), registry).version != base
    assert Policy.build(config(messages={"danger.high": "言い換え"}), registry).version == base
    assert Policy.build(config(confirmation={"pending_ttl_minutes": 5}), registry).version == base
    stricter = ToolRegistry([spec("save_memory", min_level=3)])
    assert (
        Policy.build(config(), stricter).version
        != Policy.build(config(), ToolRegistry([spec("save_memory")])).version
    )


def test_registry_danger_is_used_when_the_policy_does_not_name_the_tool():
    registry = ToolRegistry(
        [
            spec("wipe_room", danger="high"),
            spec("purge", danger="critical"),
            spec("archive", danger="medium", danger_action="block"),
            spec("tidy", danger="low"),
        ]
    )
    verdict = lambda name: evaluate(tool_call(name), registry=registry, now=NOW).reason_code  # noqa: E731
    assert verdict("wipe_room") == "danger.high"
    assert verdict("purge") == "danger.critical"
    assert verdict("archive") == "danger.blocked_operation"  # the explicit action wins over the risk level
    assert verdict("tidy") == "pass"


def test_the_policy_table_wins_over_the_registry():
    registry = ToolRegistry([spec("delete_task", danger="high", danger_action="confirm")])
    assert evaluate(tool_call("delete_task"), registry=registry, now=NOW).reason_code == "danger.medium"
    blocked = config(dangerous_operations={"delete_task": {"risk": "medium", "action": "block"}})
    assert (
        evaluate(tool_call("delete_task"), registry=registry, now=NOW, config=blocked).reason_code
        == "danger.blocked_operation"
    )


def test_a_registry_entry_that_requires_confirmation_is_confirmed():
    registry = ToolRegistry([spec("publish_report", requires_confirmation=True)])
    verdict = evaluate(tool_call("publish_report"), registry=registry, now=NOW)
    assert (verdict.reason_code, verdict.details["by"]) == ("confirmation.requested", "registry")


def test_the_policy_cli_validates_files(tmp_path, capsys):
    from shared_lib.cli import main

    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(policy_data()), encoding="utf-8")
    bad.write_text(json.dumps(policy_data(confidence={"low": 2})), encoding="utf-8")
    assert main(["policy", "validate", str(good), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["valid"] is True
    assert (
        main(["policy", "validate", str(bad)]) == 2
    )  # a file that does not validate: bad input, as flags validate
    assert "confidence.low" in capsys.readouterr().err
