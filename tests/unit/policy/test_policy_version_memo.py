"""The effective policy's configuration-and-registry part is built once per process
(``policy.effective._base``): the version it gives is the digest of the same bytes as the whole
policy written out at once, and a grown registry or another configuration is not served a kept part."""

from __future__ import annotations

import hashlib
import json

from pydantic import BaseModel

from shared_lib.policy import effective
from shared_lib.policy.authorization import required_level
from shared_lib.policy.config import load_policy_config
from shared_lib.policy.effective import Policy
from shared_lib.policy.teachings import Teaching
from shared_lib.tools.builtin import builtin_registry
from shared_lib.tools.registry import ToolSpec


def written_out(cfg, registry, extra=()) -> str:
    """The version as the policy wrote it before it kept anything: one json.dumps of it all."""
    tools = {
        spec.name: {
            "danger": spec.danger,
            "danger_action": spec.danger_action,
            "min_level": required_level(spec.name, registry, cfg.authorization),
            "requires_confirmation": spec.requires_confirmation,
        }
        for spec in registry or ()
    }
    body = json.dumps(
        {
            "config": cfg.decision_data(),
            "tools": tools,
            "teachings": [t.model_dump(mode="json") for t in extra],
        },
        sort_keys=True,
        ensure_ascii=False,
        default=str,
    )
    return f"{cfg.version}-{hashlib.sha256(body.encode()).hexdigest()[:12]}"


def teaching() -> Teaching:
    return Teaching(
        id="t-keihi",
        title="経費精算の締め",
        text="経費精算の締めは毎月25日。過ぎたら翌月回し🙏",
        effect="confirm",
        when={"tools": ["create_task"], "text_patterns": ["経費|ｹｲﾋ"]},
    )


class _NoParams(BaseModel):
    pass


def test_the_version_is_the_digest_of_the_whole_policy_written_out_with_or_without_teachings():
    cfg, registry = load_policy_config(), builtin_registry()
    assert Policy.build(cfg, registry).version == written_out(cfg, registry)
    assert Policy.build(cfg, registry).version == written_out(cfg, registry)  # kept, the same
    assert Policy.build(cfg, None).version == written_out(cfg, None)
    taught = Policy.build(cfg, registry, [teaching()])
    assert taught.version == written_out(cfg, registry, [teaching()]) != written_out(cfg, registry)
    assert taught.teachings[-1].id == "t-keihi"


def test_a_grown_registry_and_another_configuration_get_their_own_version():
    cfg, registry = load_policy_config(), builtin_registry()
    before = Policy.build(cfg, registry)
    registry.register(
        ToolSpec(
            "delete_everything",
            "全部消す",
            (),
            _NoParams,
            lambda p, ctx, txn: {},
            danger="high",
            danger_action="block",
        )
    )
    grown = Policy.build(cfg, registry)
    assert grown.version != before.version and grown.version == written_out(cfg, registry)
    assert grown.danger("delete_everything") is not None
    other = cfg.model_copy(update={"version": 2})
    assert Policy.build(other, registry).version == written_out(other, registry)


def test_kept_parts_are_bounded():
    registry = builtin_registry()
    for n in range(effective.BASES_KEPT + 5):
        cfg = load_policy_config().model_copy(update={"version": 100 + n})
        assert Policy.build(cfg, registry).version == written_out(cfg, registry)
    assert len(effective._bases) <= effective.BASES_KEPT
