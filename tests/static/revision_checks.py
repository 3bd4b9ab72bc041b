"""Static checks of the revision rollout: smoke twins, their endpoints and publishers, the pipeline.

Same shape as ``charter_static_checks``: ``check_xxx(root) -> list[str]`` over the tree rooted at
``root``; the tests run each on the real tree and on broken copies.

* ``check_smoke_twins``: every subscription a turn passes (every topic but ``deadletter`` and
  ``memory``: no turn travels them) has a smoke twin in ``modules/pubsub`` (``local.smoke_subscriptions`` as ``terraform console``
  computes it): same target, ordering and dead letters, on the twin topic ``smoke.<topic>``.
* ``check_smoke_endpoints``: the twins push to ``var.candidate_urls[target]``, which
  ``modules/charter`` wires to run_services' ``candidate_tag_urls``, which is
  ``https://<candidate_tag>---<service host>``.
* ``check_smoke_publishers``: every target may publish to the twins of exactly its own topics.
* ``check_previous_revision_kept``: after promotion the stable revision keeps its tag at 0 %.
* ``check_revision_pipeline``: the smoke step runs the smoke runner against the candidate; the
  recall gate (``infra.recall_gate``) seeds through the stable service URL and asks the candidate's
  tag URL, and the traffic shift waits for it; after ``traffic`` a rollback step runs ``charter
  rollout rollback``, and on a rollback Terraform is brought back to the pre-promotion traffic and
  the build fails.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import yaml
from charter_static_checks import RUN_SERVICES, blocks, load_topology, module_locals, nested, sub_blocks

PUBSUB = Path("terraform/modules/pubsub")
IAM = Path("terraform/modules/iam")
CHARTER = Path("terraform/modules/charter")
_TOP_BLOCK = re.compile(r"^(locals|variable \"[^\"]+\") \{\n.*?^\}\n", re.MULTILINE | re.DOTALL)


def evaluate(root: Path, module: Path, name: str) -> Any:
    """``local.<name>`` of ``root/module`` as ``terraform console`` computes it, offline.

    Only the module's ``locals`` and ``variable`` blocks are copied (with the JSON files of
    ``shared_lib`` they may ``file()``), so no provider or resource is needed. ``RuntimeError``
    when terraform is missing or the expression fails.
    """
    binary = shutil.which("terraform")
    if binary is None:
        raise RuntimeError("terraform binary not found")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / module
        work.mkdir(parents=True)
        text = "".join(
            match.group(0)
            for path in sorted((root / module).glob("*.tf"))
            for match in _TOP_BLOCK.finditer(path.read_text(encoding="utf-8"))
        )
        (work / "locals.tf").write_text(text, encoding="utf-8")
        for data in (root / "shared_lib").rglob("*.json"):
            target = Path(tmp) / data.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(data, target)
        result = subprocess.run(
            [binary, "console", "-no-color"],
            input=f"jsonencode(local.{name})\n",
            cwd=work,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    errors = [line.strip() for line in result.stderr.splitlines() if line.strip().startswith("Error")]
    if result.returncode != 0 or errors or not result.stdout.strip():
        raise RuntimeError(f"terraform console on {module}: {result.stderr.strip()}")
    return json.loads(json.loads(result.stdout))


def _smoke(root: Path) -> dict[str, Any]:
    smoke: dict[str, Any] = load_topology(root)["smoke"]
    return smoke


# Topics no turn travels: dead letters (one topic for every turn) and the background memory jobs
# (the memory target's candidate is smoke-tested by the twin of its subscription on completed).
NO_TURNS = frozenset({"deadletter", "memory"})


def check_smoke_twins(root: Path) -> list[str]:
    """Every subscription a turn passes has its smoke twin in modules/pubsub."""
    topology = load_topology(root)
    smoke = _smoke(root)
    violations = [
        f"topic {key!r} carries turns but has no smoke twin in topology.json"
        for key in sorted(set(topology["topics"]) - set(smoke["topics"]) - NO_TURNS)
    ]
    try:
        twins = evaluate(root, PUBSUB, "smoke_subscriptions")
        topics = evaluate(root, PUBSUB, "smoke_topics")
    except RuntimeError as exc:
        return [*violations, str(exc)]
    for name, sub in topology["subscriptions"].items():
        if sub["topic"] in NO_TURNS:
            continue
        twin = twins.get(smoke["subscription_prefix"] + name)
        if twin is None:
            violations.append(f"subscription {name!r} has no smoke twin")
            continue
        expected = {**sub, "topic": smoke["topic_prefix"] + sub["topic"]}
        if twin != expected:
            violations.append(f"smoke twin of {name!r} is {twin}, expected {expected}")
        if topics.get(twin["topic"]) != smoke["topic_prefix"] + topology["topics"][sub["topic"]]:
            violations.append(f"smoke twin of {name!r}: its topic {twin['topic']!r} is not the twin topic")
    resources = [
        b
        for b in blocks(root, type_="google_pubsub_subscription")
        if b.path.parent == root / PUBSUB and "local.smoke_subscriptions" in str(b.body.get("for_each"))
    ]
    if len(resources) != 1:
        violations.append(
            "modules/pubsub needs one subscription resource for_each over local.smoke_subscriptions"
        )
    for block in resources:
        if "google_pubsub_topic.smoke[each.value.topic]" not in str(block.body.get("topic")):
            violations.append(f"{block.address}: topic must be google_pubsub_topic.smoke[each.value.topic]")
    smoke_topics = [
        b
        for b in blocks(root, type_="google_pubsub_topic")
        if "local.smoke_topics" in str(b.body.get("for_each"))
    ]
    if len(smoke_topics) != 1 or smoke_topics[0].body.get("name") != "${each.value}":
        violations.append(
            "modules/pubsub needs one topic resource for_each over local.smoke_topics named each.value"
        )
    return violations


def check_smoke_endpoints(root: Path) -> list[str]:
    """Smoke twins push to the candidate revision's tag URL of their target."""
    violations = []
    for block in blocks(root, type_="google_pubsub_subscription"):
        if "smoke" not in str(block.body.get("for_each")):
            continue
        config = (sub_blocks(block.body, "push_config") or [{}])[0]
        if config.get("push_endpoint") != "${var.candidate_urls[each.value.target]}":
            violations.append(f"{block.address}: push_endpoint is not var.candidate_urls[each.value.target]")
        if not sub_blocks(config, "oidc_token"):
            violations.append(f"{block.address}: push_config has no oidc_token")
    pubsub_calls = [
        b for b in blocks(root, kind="module") if b.name == "pubsub" and b.path.parent == root / CHARTER
    ]
    wired = [str(b.body.get("candidate_urls")) for b in pubsub_calls]
    if wired != ["${module.run_services.candidate_tag_urls}"]:
        violations.append(
            f"modules/charter must pass candidate_urls = module.run_services.candidate_tag_urls: {wired}"
        )
    outputs = [
        entry["candidate_tag_urls"]
        for path in sorted((root / RUN_SERVICES).glob("*.tf"))
        for entry in _parse(path).get("output", [])
        if "candidate_tag_urls" in entry
    ]
    value = str(outputs[0].get("value")) if outputs else ""
    tag_url = 'https://${var.candidate_tag}---${trimprefix(service.uri, "https://")}'
    if tag_url not in value:
        violations.append(f"run_services output candidate_tag_urls is not {tag_url}: {value!r}")
    return violations


def _parse(path: Path) -> dict[str, Any]:
    from charter_static_checks import parse_hcl

    return parse_hcl(path)


def check_smoke_publishers(root: Path) -> list[str]:
    """Each target may publish to the twins of its own topics, and to no other twin."""
    smoke = _smoke(root)
    publishes = module_locals(root / IAM).get("publishes") or {}
    expected = {
        f"{target}/{topic}"
        for target, topics in publishes.items()
        for key in topics
        for topic in ([key, smoke["topic_prefix"] + key] if key in smoke["topics"] else [key])
    }
    try:
        grants = evaluate(root, IAM, "publisher_grants")
    except RuntimeError as exc:
        return [str(exc)]
    violations = [f"iam: {g} is missing from publisher_grants" for g in sorted(expected - set(grants))]
    violations += [f"iam: publisher_grants has {g} beyond the policy" for g in sorted(set(grants) - expected)]
    return violations


def check_previous_revision_kept(root: Path) -> list[str]:
    """After promotion the stable revision keeps its tag (0 %): a revision rollback's target."""
    violations = []
    for service in blocks(root, type_="google_cloud_run_v2_service"):
        stable = [
            (body, for_each)
            for body, for_each in nested(service.body, "traffic")
            if "stable_tag" in str(body.get("tag")) and "stable_tag" in str(body.get("revision"))
        ]
        if len(stable) != 1:
            violations.append(f"{service.address}: needs one traffic block for the stable_tag revision")
            continue
        body, for_each = stable[0]
        if "candidate_percent" in str(for_each):
            violations.append(
                f"{service.address}: the stable revision's traffic block ends with the promotion"
            )
        if "100 - var.candidate_percent" not in str(body.get("percent")):
            violations.append(
                f"{service.address}: the stable revision's percent must be 100 - candidate_percent"
            )
    return violations


def _script(step: dict[str, Any]) -> str:
    return " ".join(str(step.get(k, "")) for k in ("script", "args", "entrypoint"))


def check_revision_pipeline(root: Path) -> list[str]:
    """Smoke through every candidate, the recall gate, then promotion, then the rollback check and its
    Terraform sync."""
    steps = yaml.safe_load((root / "cloudbuild.yaml").read_text(encoding="utf-8")).get("steps") or []
    ids = [s.get("id") for s in steps]
    by_id = {s.get("id"): s for s in steps}
    order = ("smoke", "recall-gate", "traffic", "rollback", "rollback-sync")
    violations = [f"missing step {i!r}" for i in order if i not in ids]
    if violations:
        return violations
    if [ids.index(i) for i in order] != sorted(ids.index(i) for i in order):
        violations.append(f"expected {' < '.join(order)}, got {ids}")
    recall = _script(by_id["recall-gate"])
    if "infra.recall_gate" not in recall:
        violations.append("recall-gate must run infra.recall_gate (the candidate recalls what stable heard)")
    elif "service_urls.json" not in recall or "candidate_urls.json" not in recall:
        violations.append(
            "recall-gate must seed through the stable service URL and ask the candidate's tag URL"
        )
    elif "--expect-revision" not in recall:
        violations.append("recall-gate must check that the candidate revisions answered the recall question")
    if by_id["recall-gate"].get("waitFor") != ["smoke"] or by_id["traffic"].get("waitFor") != ["recall-gate"]:
        violations.append("traffic must wait for recall-gate, which waits for smoke")
    if by_id["recall-gate"].get("allowExitCodes"):
        violations.append("recall-gate's failure must fail the build before the traffic shift")
    smoke = _script(by_id["smoke"])
    if "infra.smoke_runner" not in smoke or "candidate_urls.json" not in smoke:
        violations.append("smoke must run infra.smoke_runner against the candidate's tag URL")
    if "--expect-revision" not in smoke:
        violations.append("smoke must check that every layer's candidate revision handled the turn")
    rollback = by_id["rollback"]
    if "charter rollout rollback" not in _script(rollback) or "--since-shift" not in _script(rollback):
        violations.append("rollback must run charter rollout rollback --since-shift after the promotion")
    if 1 not in (rollback.get("allowExitCodes") or []):
        violations.append(
            "rollback must allow exit 1 (rolled back) so rollback-sync can run and fail the build"
        )
    if by_id["rollback"].get("waitFor") != ["traffic"]:
        violations.append("rollback must wait for traffic")
    sync = _script(by_id["rollback-sync"])
    if "candidate_percent=0" not in sync or "exit 1" not in sync.split("candidate_percent=0", 1)[-1]:
        violations.append("rollback-sync must apply candidate_percent=0 and then fail the build (exit 1)")
    return violations


REVISION_CHECKS = (
    check_smoke_twins,
    check_smoke_endpoints,
    check_smoke_publishers,
    check_previous_revision_kept,
    check_revision_pipeline,
)
