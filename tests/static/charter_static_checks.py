"""Static policy checks over ``terraform/``, ``cloudbuild.yaml``, the ``Dockerfile`` and ``.dockerignore``.

Every check has the shape ``check_xxx(root: Path) -> list[str]``: it reads the repository rooted at
``root`` and returns human-readable violations (an empty list means compliant). The tests run each
check on the real tree and on deliberately broken copies (the mutation tests), which proves that a
check can fail at all.

Terraform resources are generated with ``for_each`` over ``shared_lib/delivery/topology.json``, so a check
looks at the resource *block* as written (its attributes, its static or ``dynamic`` sub-blocks,
the expressions it uses) and at topology.json (what the ``for_each`` expands to).

Example::

    >>> check_public_access(Path("/work/main"))
    []
"""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hcl2
import yaml

from shared_lib.delivery.topology import TOPOLOGY as PRODUCT_TOPOLOGY
from shared_lib.settings import deploy_contract

TOPOLOGY = Path("shared_lib/delivery/topology.json")
COLLECTIONS = Path("shared_lib/config/collections.json")
ENVIRONMENTS = ("dev", "stg", "prod")
# The one Terraform root; an environment is its <env>.tfvars and <env>.gcs.tfbackend.
ROOT_DIR = Path("terraform/envs")
RUN_SERVICES = Path("terraform/modules/run_services")
MONITORING = Path("terraform/modules/monitoring")

# Root variables every <env>.tfvars must set: they have no default in the root.
ENV_SPECIFIC_VARIABLES = frozenset(
    {
        "env",
        "daily_llm_budget_usd",
        "deletion_protection",
        "firestore_pitr",
        "service_sizing",
        "vault_key_generations",
    }
)
# Root variables without a default that the pipeline (or the operator) gives on the command line.
COMMAND_LINE_VARIABLES = frozenset({"project_id", "image"})
# Targets a user waits for: prod keeps one instance of each warm.
WARM_IN_PROD = ("ingress", "brain", "responder")
# Seed 000 §15.1 warns at 5,000 JPY a day, about 33 USD: no environment may alert later.
SEED_DAILY_BUDGET_USD = 33

# The design's output topics per target (DESIGN.md §3; issue #8). Every layer of the turn also
# publishes events; the observer consumes events and publishes nothing; admin emits events,
# the background memory jobs (POST /tasks/memory/<job>) and the turns a paused intake held
# (Resume publishes them to received); the memory target only emits events.
EXPECTED_PUBLISHES: dict[str, set[str]] = {
    "ingress": {"received", "events"},
    "context": {"contextualized", "completed", "events"},  # completed: a turn the debounce absorbed
    "brain": {"proposed", "events"},
    "brain_shadow": {"shadow", "events"},
    "guardian": {"guarded", "events"},
    "authorizer": {"authorized", "events"},
    "executor": {"executed", "events"},
    "responder": {"completed", "contextualized", "events"},
    "observer": set(),
    "memory": {"events"},
    "admin": {"events", "memory", "received"},
}

# Env var => secret id each target mounts (issue #8; "One composition root, one settings model").
# The env var names are the ones the product reads (no operator token: operators act by identity).
# brain_shadow runs the candidate arm, which calls
# the LLM and masks into the vault like brain. Tasks live in ChatWork: executor writes them,
# context lists them.
# The Secret Manager id of each secret the settings model reads (the names are the settings').
SECRET_IDS: dict[str, str] = {
    "CHATWORK_WEBHOOK_TOKEN": "chatwork-webhook-token",
    "LINE_CHANNEL_SECRET": "line-channel-secret",
    "SLACK_SIGNING_SECRET": "slack-signing-secret",
    "HTTP_WEBHOOK_SECRET": "http-webhook-secret",
    "HTTP_WEBHOOK_TENANTS": "http-webhook-tenants",
    "CHATWORK_API_TOKEN": "chatwork-api-token",
    "LINE_CHANNEL_ACCESS_TOKEN": "line-channel-access-token",
    "SLACK_BOT_TOKEN": "slack-bot-token",
    "ANTHROPIC_API_KEY": "anthropic-api-key",
    "CHARTER_VAULT_KEY": "charter-vault-key",
    "CHARTER_ALERT_WEBHOOK_SECRET": "alert-webhook-secret",
}

# Target -> {secret env var -> secret id}: derived from the settings model's deploy contract.
EXPECTED_SECRET_ENV: dict[str, dict[str, str]] = {
    target: {
        name: SECRET_IDS[name] for name, how in sorted(deploy_contract(target).items()) if how == "secret"
    }
    for target in PRODUCT_TOPOLOGY.targets
}

# Secrets each target may read, derived from the map above.
EXPECTED_SECRET_READERS: dict[str, set[str]] = {
    target: set(secrets.values()) for target, secrets in EXPECTED_SECRET_ENV.items() if secrets
}

EXPECTED_SECRETS = frozenset().union(*EXPECTED_SECRET_READERS.values())

# The secret whose value Terraform generates (a Fernet key, read as CHARTER_VAULT_KEY).
GENERATED_SECRET = "charter-vault-key"

# Plain env vars a target needs beyond common_env and THREADS, with their values.
EXPECTED_PLAIN_ENV: dict[str, dict[str, str]] = {
    "context": {"CHARTER_TASK_BACKEND": "chatwork"},
    "executor": {"CHARTER_TASK_BACKEND": "chatwork"},
}

# Env vars Terraform sets that no product source names: read by the runtime, or set ahead of the
# code that will read it.
RUNTIME_ENV = {
    "THREADS": "functions-framework's gunicorn (threads of its one worker)",
    "CHARTER_FLAGS_DOCUMENT": "the flag document path, read by the settings model once it lands",
}

TTL_COLLECTION_GROUPS = frozenset({"idempotency", "receipts", "sessions", "pending_actions"})

# Alert key in the monitoring module's local.alerts => its threshold.
# Seed 000 §15.1: LLM latency > 10 s, tool error rate > 5 %, confirmation rate > 30 % (info),
# block rate > 10 %, daily cost over budget; dead letters and ingress 5xx are ours.
SEED_ALERTS: dict[str, float | str] = {
    "llm_latency": 10_000,
    "tool_error_rate": 0.05,
    "confirm_rate": 0.30,
    "block_rate": 0.10,
    "daily_cost": "${var.daily_cost_budget_usd}",  # per environment
    "deadletter_backlog": 0,
    "ingress_5xx": 0.01,
}

PIPELINE_ORDER = ("lint", "test", "build", "push", "deploy-0pct", "smoke", "recall-gate", "traffic")


_SENSITIVE_NAME = re.compile(r"TOKEN|SECRET|KEY", re.IGNORECASE)
# A plain value built from a secret-looking variable or local (var.slack_bot_token, local.secrets...).
_SECRET_REFERENCE = re.compile(r"\b(?:var|local)\.\w*(?:token|secret|key)", re.IGNORECASE)
_PUBLIC_MEMBERS = ("allUsers", "allAuthenticatedUsers")
_HCL_OPTIONS = hcl2.SerializationOptions(with_comments=False, strip_string_quotes=True)


# --- reading the tree --------------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    """One ``resource``/``data``/``module`` block as parsed by python-hcl2."""

    kind: str
    type: str
    name: str
    body: dict[str, Any]
    path: Path

    @property
    def address(self) -> str:
        """``TYPE.NAME (file)``, for messages."""
        return f"{self.type}.{self.name} ({self.path.parent.name}/{self.path.name})"


@functools.lru_cache(maxsize=512)
def _parse_hcl_text(text: str) -> dict[str, Any]:
    """Parse HCL text (cached by content, so mutated copies re-parse only the changed file)."""
    return hcl2.loads(text, serialization_options=_HCL_OPTIONS)


def parse_hcl(path: Path) -> dict[str, Any]:
    """Parse one ``.tf`` file into python-hcl2's dict form (quotes stripped, no comments)."""
    return _parse_hcl_text(path.read_text(encoding="utf-8"))


def tf_files(root: Path) -> list[Path]:
    """Every ``.tf`` file under ``root/terraform`` (provider caches excluded)."""
    return sorted(p for p in (root / "terraform").rglob("*.tf") if ".terraform" not in p.parts)


def load_topology(root: Path) -> dict[str, Any]:
    """``shared_lib/delivery/topology.json`` of the tree."""
    data: dict[str, Any] = json.loads((root / TOPOLOGY).read_text(encoding="utf-8"))
    return data


def blocks(root: Path, kind: str = "resource", type_: str | None = None) -> list[Block]:
    """All blocks of ``kind`` (``resource``, ``data``, ``module``), optionally of one type."""
    found: list[Block] = []
    for path in tf_files(root):
        for entry in parse_hcl(path).get(kind, []):
            if kind == "module":
                for name, body in entry.items():
                    if name != "__is_block__":
                        found.append(Block(kind, "module", name, body, path))
                continue
            for rtype, named in entry.items():
                if rtype == "__is_block__" or (type_ is not None and rtype != type_):
                    continue
                for name, body in named.items():
                    if name != "__is_block__":
                        found.append(Block(kind, rtype, name, body, path))
    return found


def module_locals(directory: Path) -> dict[str, Any]:
    """Merged ``locals`` of every ``.tf`` file directly in ``directory``."""
    merged: dict[str, Any] = {}
    for path in sorted(directory.glob("*.tf")):
        for entry in parse_hcl(path).get("locals", []):
            merged.update({k: v for k, v in entry.items() if k != "__is_block__"})
    return merged


def sub_blocks(body: dict[str, Any], name: str) -> list[dict[str, Any]]:
    """Static nested blocks ``name { ... }`` of a block body."""
    value = body.get(name)
    if isinstance(value, list):
        return [item for item in value if isinstance(item, dict) and item.get("__is_block__")]
    return []


def dynamic_blocks(body: dict[str, Any], name: str) -> list[tuple[dict[str, Any], str]]:
    """``dynamic "name"`` blocks as (content body, for_each expression)."""
    found = []
    for entry in body.get("dynamic", []):
        spec = entry.get(name) if isinstance(entry, dict) else None
        if isinstance(spec, dict):
            contents = sub_blocks(spec, "content")
            found.append((contents[0] if contents else {}, str(spec.get("for_each", ""))))
    return found


def nested(body: dict[str, Any], name: str) -> list[tuple[dict[str, Any], str | None]]:
    """Static and dynamic ``name`` blocks as (body, for_each or None for static)."""
    static: list[tuple[dict[str, Any], str | None]] = [(b, None) for b in sub_blocks(body, name)]
    return static + [(content, for_each) for content, for_each in dynamic_blocks(body, name)]


def walk_strings(value: Any, skip_keys: frozenset[str] = frozenset()) -> Iterator[str]:
    """Every string (keys excluded) inside a parsed value."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            if key not in skip_keys:
                yield from walk_strings(item, skip_keys)
    elif isinstance(value, list):
        for item in value:
            yield from walk_strings(item, skip_keys)


def local_refs(expression: str) -> set[str]:
    """Names of ``local.X`` references in an expression."""
    return set(re.findall(r"\blocal\.([A-Za-z_][A-Za-z0-9_]*)", expression))


def string_items(value: Any) -> set[str]:
    """The strings of a list/set value: a parsed list, or the literals of ``toset([...])``."""
    if isinstance(value, list):
        return {str(v) for v in value}
    if isinstance(value, dict):
        return {k for k in value if k != "__is_block__"}
    if isinstance(value, str):
        return set(re.findall(r'"([^"$]+)"', value))
    return set()


def resolve_for_each(block: Block) -> set[str] | None:
    """Keys a ``for_each`` over a literal module local expands to (None if not such a local)."""
    expression = str(block.body.get("for_each", ""))
    refs = local_refs(expression)
    if len(refs) != 1:
        return None
    value = module_locals(block.path.parent).get(refs.pop())
    return string_items(value) if value is not None else None


def _first(items: list[dict[str, Any]]) -> dict[str, Any]:
    return items[0] if items else {}


# --- terraform: formatting and topology -------------------------------------------------------


def check_terraform_fmt(root: Path) -> list[str]:
    """``terraform fmt -check -recursive terraform`` must succeed (needs the terraform binary)."""
    binary = shutil.which("terraform")
    if binary is None:
        return ["terraform binary not found"]
    result = subprocess.run(
        [binary, "fmt", "-check", "-recursive", "-list=true", "-no-color", str(root / "terraform")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if result.returncode == 0:
        return []
    files = [line for line in result.stdout.splitlines() if line.strip()]
    return [f"terraform fmt: needs formatting: {f}" for f in files] or [
        f"terraform fmt failed: {result.stderr}"
    ]


def check_topology_source(root: Path) -> list[str]:
    """Topics, subscriptions, services and service accounts are ``for_each`` over topology.json.

    A ``for_each`` may go through a module local (the smoke twins: ``local.smoke_topics``); the
    local's expression is read with it (``resolve_for_each_source``).
    """
    violations = []
    topology_file = (root / TOPOLOGY).resolve()
    for path in tf_files(root):
        if "local.topology" not in path.read_text(encoding="utf-8"):
            continue
        expression = str(module_locals(path.parent).get("topology", ""))
        match = re.search(r'jsondecode\(file\("\$\{path\.(module|root)\}/([^"]+)"\)\)', expression)
        if match is None:
            violations.append(f"{path}: uses local.topology but the module does not jsondecode(file(...)) it")
        elif (path.parent / match.group(2)).resolve() != topology_file:
            violations.append(f"{path}: local.topology reads {match.group(2)}, not {TOPOLOGY}")

    expected = {
        "google_pubsub_topic": "topology.topics",
        "google_cloud_run_v2_service": "topology.targets",
        "google_service_account": "topology.targets",
    }
    for rtype, source in expected.items():
        found = blocks(root, type_=rtype)
        if not any(source in str(b.body.get("for_each", "")) for b in found):
            violations.append(f"no {rtype} is generated with for_each over {source}")
        if rtype != "google_service_account":
            violations += [
                f"{b.address}: for_each is not {source}"
                for b in found
                if source not in resolve_for_each_source(b)
            ]
    for sub in blocks(root, type_="google_pubsub_subscription"):
        if sub_blocks(sub.body, "push_config") and "topology.subscriptions" not in resolve_for_each_source(
            sub
        ):
            violations.append(
                f"{sub.address}: push subscriptions must be for_each over topology.subscriptions"
            )
        if sub_blocks(sub.body, "push_config") and sub.body.get("name") != "${each.key}":
            violations.append(f"{sub.address}: name must be each.key (the topology.json subscription name)")
    return violations


def check_no_hardcoded_names(root: Path) -> list[str]:
    """No topic or subscription name of topology.json is written in a ``.tf`` file."""
    topology = load_topology(root)
    names = list(topology["topics"].values()) + list(topology["subscriptions"])
    violations = []
    for path in tf_files(root):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if re.search(r"\bturns\.[a-z]", line):
                violations.append(f"{path}:{number}: hard-coded topic name ('turns.'): {line.strip()}")
                continue
            for name in names:
                if re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", line):
                    violations.append(f"{path}:{number}: hard-coded name {name!r}: {line.strip()}")
    return violations


def check_topology_references(root: Path) -> list[str]:
    """Target and topic keys written in HCL (policy maps, indexes) exist in topology.json."""
    topology = load_topology(root)
    targets, topics = set(topology["targets"]), set(topology["topics"])
    violations = []
    modules = root / "terraform" / "modules"
    iam = module_locals(modules / "iam")
    run = module_locals(modules / "run_services")
    keyed = {
        "iam local.publishes": string_items(iam.get("publishes")),
        "run_services local.service_env": string_items(run.get("service_env")),
        "run_services local.service_secrets": string_items(run.get("service_secrets")),
        "run_services local.layer_sizing": string_items(run.get("layer_sizing")),
        "run_services local.unauthenticated_targets": string_items(run.get("unauthenticated_targets")),
    }
    for where, keys in keyed.items():
        violations += [f"{where}: {key!r} is not a target of topology.json" for key in sorted(keys - targets)]
    for target, published in (iam.get("publishes") or {}).items():
        violations += [
            f"iam local.publishes[{target}]: {t!r} is not a topic key" for t in published if t not in topics
        ]
    pubsub = module_locals(modules / "pubsub")
    if pubsub.get("deadletter_key") not in topics:
        violations.append("pubsub local.deadletter_key is not a topic key of topology.json")
    index_pattern = re.compile(
        r'(?:service_urls|service_names|google_cloud_run_v2_service\.this)\["([^"]+)"\]'
    )
    for path in tf_files(root):
        for key in index_pattern.findall(path.read_text(encoding="utf-8")):
            if key not in targets:
                violations.append(
                    f"{path}: indexes a service by {key!r}, which is not a topology.json target"
                )
    return violations


# --- terraform: Pub/Sub --------------------------------------------------------------------------


def check_push_subscriptions(root: Path) -> list[str]:
    """Push subscriptions: OIDC, retry policy, dead letters where topology.json asks, topology values."""
    topology = load_topology(root)
    any_dead_letter = any(s["dead_letter"] for s in topology["subscriptions"].values())
    all_dead_letter = all(s["dead_letter"] for s in topology["subscriptions"].values())
    any_filter = any(s.get("filter") for s in topology["subscriptions"].values())
    subs = blocks(root, type_="google_pubsub_subscription")
    push = [s for s in subs if sub_blocks(s.body, "push_config")]
    violations = [] if push else ["no push google_pubsub_subscription found"]
    for sub in push:
        config = sub_blocks(sub.body, "push_config")[0]
        oidc = _first(sub_blocks(config, "oidc_token"))
        if not oidc.get("service_account_email"):
            violations.append(f"{sub.address}: push_config has no oidc_token with a service account")
        if "each.value.target" not in str(config.get("push_endpoint", "")):
            violations.append(f"{sub.address}: push_endpoint is not the URL of the subscription's target")
        retry = nested(sub.body, "retry_policy")
        if not retry:
            violations.append(f"{sub.address}: no retry_policy")
        for policy, _ in retry:
            for bound in ("minimum_backoff", "maximum_backoff"):
                if f"{bound}_seconds" not in str(policy.get(bound, "")):
                    violations.append(
                        f"{sub.address}: retry_policy.{bound} does not come from topology retry"
                    )
        dead_letter = nested(sub.body, "dead_letter_policy")
        if any_dead_letter and not dead_letter:
            violations.append(
                f"{sub.address}: no dead_letter_policy although topology.json asks for dead letters"
            )
        for policy, for_each in dead_letter:
            if for_each is None and not all_dead_letter:
                violations.append(
                    f"{sub.address}: static dead_letter_policy also applies to dead_letter=false"
                )
            if for_each is not None and "dead_letter" not in for_each:
                violations.append(f"{sub.address}: dynamic dead_letter_policy is not driven by dead_letter")
            if "max_delivery_attempts" not in str(policy.get("max_delivery_attempts", "")):
                violations.append(f"{sub.address}: max_delivery_attempts does not come from topology retry")
            if "deadletter" not in str(policy.get("dead_letter_topic", "")) + str(for_each):
                violations.append(f"{sub.address}: dead_letter_topic is not the deadletter topic")
        if "ordered" not in str(sub.body.get("enable_message_ordering", "")):
            violations.append(f"{sub.address}: enable_message_ordering does not come from 'ordered'")
        if "ack_deadline_seconds" not in str(sub.body.get("ack_deadline_seconds", "")):
            violations.append(f"{sub.address}: ack_deadline_seconds does not come from topology retry")
        if any_filter and "each.value.filter" not in str(sub.body.get("filter", "")):
            violations.append(f"{sub.address}: filter does not come from topology.json's subscription filter")

    bigquery = [s for s in subs if sub_blocks(s.body, "bigquery_config")]
    if not bigquery:
        violations.append("no BigQuery subscription (bigquery_config) found")
    for sub in bigquery:
        config = sub_blocks(sub.body, "bigquery_config")[0]
        if config.get("use_table_schema") is not True:
            violations.append(f"{sub.address}: bigquery_config.use_table_schema must be true")
        if "bigquery.topic" not in str(sub.body.get("topic", "")):
            violations.append(f"{sub.address}: topic is not topology.json bigquery.topic")
        if not nested(sub.body, "retry_policy") or not nested(sub.body, "dead_letter_policy"):
            violations.append(f"{sub.address}: needs retry_policy and dead_letter_policy")
    return violations


def check_deadletter_permissions(root: Path) -> list[str]:
    """The Pub/Sub service agent publishes to the dead-letter topic and subscribes where it forwards."""

    def is_agent(member: Any) -> bool:
        return "pubsub_service_agent" in str(member) or "gcp-sa-pubsub" in str(member)

    publisher = [
        b
        for b in blocks(root, type_="google_pubsub_topic_iam_member")
        if b.body.get("role") == "roles/pubsub.publisher"
        and is_agent(b.body.get("member"))
        and "deadletter" in str(b.body.get("topic"))
    ]
    subscriber = [
        b
        for b in blocks(root, type_="google_pubsub_subscription_iam_member")
        if b.body.get("role") == "roles/pubsub.subscriber"
        and is_agent(b.body.get("member"))
        and "dead_letter" in str(resolve_for_each_source(b))
    ]
    agent_sources = [str(b.body.get("member")) for b in publisher + subscriber]
    violations = []
    if not publisher:
        violations.append(
            "Pub/Sub service agent is not granted roles/pubsub.publisher on the deadletter topic"
        )
    if not subscriber:
        violations.append(
            "Pub/Sub service agent is not granted roles/pubsub.subscriber on dead-lettered subs"
        )
    charter = module_locals(root / "terraform" / "modules" / "charter")
    agent = str(charter.get("pubsub_service_agent", ""))
    if agent_sources and not re.fullmatch(
        r"service-\$\{data\.google_project\.[a-z_]+\.number\}@gcp-sa-pubsub\.iam\.gserviceaccount\.com", agent
    ):
        violations.append(f"pubsub_service_agent is not service-PROJECT_NUMBER@gcp-sa-pubsub...: {agent!r}")
    return violations


def resolve_for_each_source(block: Block) -> str:
    """The ``for_each`` expression of a block plus the expressions of the locals it names."""
    expression = str(block.body.get("for_each", ""))
    found = module_locals(block.path.parent)
    return " ".join([expression] + [str(found.get(name, "")) for name in local_refs(expression)])


# --- terraform: IAM and access -----------------------------------------------------------------


def check_public_access(root: Path) -> list[str]:
    """``allUsers``/``allAuthenticatedUsers`` only as run.invoker of the ingress service."""
    violations = []
    for block in blocks(root):
        if not any(m in s for s in walk_strings(block.body) for m in _PUBLIC_MEMBERS):
            continue
        if block.type != "google_cloud_run_v2_service_iam_member":
            violations.append(f"{block.address}: grants a public member; only ingress run.invoker may")
            continue
        targets = resolve_for_each(block)
        if targets is None:
            targets = set(re.findall(r'\["([^"]+)"\]', str(block.body.get("name", "")))) or None
        if targets != {"ingress"}:
            violations.append(
                f"{block.address}: public run.invoker on {sorted(targets or ['<unknown>'])}, "
                "only ingress may be public"
            )
        if block.body.get("role") != "roles/run.invoker":
            violations.append(f"{block.address}: public member with role {block.body.get('role')}")
    skip = frozenset({"description", "error_message", "condition"})
    for path in tf_files(root):
        parsed = parse_hcl(path)
        for kind in ("module", "variable", "locals"):
            if any(m in s for s in walk_strings(parsed.get(kind, []), skip) for m in _PUBLIC_MEMBERS):
                violations.append(f"{path}: a {kind} block passes a public member")
    for service in blocks(root, type_="google_cloud_run_v2_service"):
        ingress = str(service.body.get("ingress", ""))
        if not ("public" in ingress and "INGRESS_TRAFFIC_ALL" in ingress and "INTERNAL_ONLY" in ingress):
            violations.append(
                f"{service.address}: ingress must be ALL for public targets, INTERNAL_ONLY else"
            )
    return violations


def check_invokers(root: Path) -> list[str]:
    """Internal services are invokable by the Pub/Sub invoker only; admin by scheduler and operators."""
    violations = []
    members = blocks(root, type_="google_cloud_run_v2_service_iam_member")
    internal = [b for b in members if "pubsub_invoker" in str(b.body.get("member"))]
    if not internal or not all("public" in str(b.body.get("for_each")) for b in internal):
        violations.append(
            "non-public services must get run.invoker for the Pub/Sub invoker, by 'public' flag"
        )
    for block in members:
        member = str(block.body.get("member"))
        operators = member == "${each.key}" and "admin_invoker_members" in str(block.body.get("for_each"))
        if not (operators or any(known in member for known in ("pubsub_invoker", "allUsers", "scheduler"))):
            violations.append(f"{block.address}: unexpected run.invoker member {member}")
        if (operators or "scheduler" in member) and '["admin"]' not in str(block.body.get("name")):
            violations.append(f"{block.address}: scheduler/operators may invoke admin only")
    for rtype in ("google_cloud_run_v2_service_iam_binding", "google_cloud_run_v2_service_iam_policy"):
        violations += [f"{b.address}: use _iam_member grants" for b in blocks(root, type_=rtype)]
    return violations


def check_service_accounts(root: Path) -> list[str]:
    """Each Cloud Run service runs as its own service account, one per topology target."""
    violations = []
    services = blocks(root, type_="google_cloud_run_v2_service")
    if not services:
        violations.append("no google_cloud_run_v2_service found")
    for service in services:
        template = _first(sub_blocks(service.body, "template"))
        account = str(template.get("service_account", ""))
        if "[each.key]" not in account:
            violations.append(f"{service.address}: template.service_account must be the target's own account")
    accounts = blocks(root, type_="google_service_account")
    if not any("topology.targets" in str(a.body.get("for_each")) for a in accounts):
        violations.append("no google_service_account per topology target")
    for path in tf_files(root):
        if "compute@developer.gserviceaccount.com" in path.read_text(encoding="utf-8"):
            violations.append(f"{path}: uses the default compute service account")
    return violations


def check_publisher_grants(root: Path) -> list[str]:
    """roles/pubsub.publisher only on each target's own output topics (policy in modules/iam locals)."""
    topology = load_topology(root)
    iam_dir = root / "terraform" / "modules" / "iam"
    publishes = {t: set(v) for t, v in (module_locals(iam_dir).get("publishes") or {}).items()}
    violations = []
    if set(publishes) != set(topology["targets"]):
        violations.append(f"iam local.publishes must name every target: {sorted(set(publishes))}")
    for target, topics in publishes.items():
        extra = topics - EXPECTED_PUBLISHES.get(target, set())
        missing = EXPECTED_PUBLISHES.get(target, set()) - topics
        if extra:
            violations.append(f"{target} may publish to {sorted(extra)}, which are not its output topics")
        if missing:
            violations.append(f"{target} cannot publish to its output topics {sorted(missing)}")
        if "deadletter" in topics:
            violations.append(f"{target} may publish to the dead-letter topic")
    published = set().union(*publishes.values()) if publishes else set()
    consumed = {s["topic"] for s in topology["subscriptions"].values()} - {"deadletter"}
    violations += [f"topic {t!r} has subscribers but no publisher" for t in sorted(consumed - published)]

    publisher_roles = {"roles/pubsub.publisher", "roles/pubsub.editor", "roles/pubsub.admin"}
    for block in blocks(root):
        if block.body.get("role") not in publisher_roles:
            continue
        own_grant = (
            block.type == "google_pubsub_topic_iam_member"
            and block.path.parent == iam_dir
            and "local.publishes" in resolve_for_each_source(block)
            and "each.value.topic" in str(block.body.get("topic"))
            and "each.value.target" in str(block.body.get("member"))
        )
        agent_grant = (
            block.type == "google_pubsub_topic_iam_member"
            and "pubsub_service_agent" in str(block.body.get("member"))
            and "deadletter" in str(block.body.get("topic"))
        )
        if not (own_grant or agent_grant):
            violations.append(
                f"{block.address}: {block.body.get('role')} outside the per-target topic policy"
            )
    return violations


def check_secret_access(root: Path) -> list[str]:
    """Secrets: created and granted exactly as run_services' service_secrets mounts them.

    The secrets module creates ``var.secret_ids``, which modules/charter derives from
    run_services' ``service_secrets``; modules/iam grants secretAccessor per (target, secret) of
    the same map. The only secret value in Terraform is the generated vault key.
    """
    modules = root / "terraform" / "modules"
    mounted = {
        t: dict(v) for t, v in (module_locals(modules / "run_services").get("service_secrets") or {}).items()
    }
    violations = []
    if mounted != EXPECTED_SECRET_ENV:
        violations.append(
            f"run_services local.service_secrets differs from the least-privilege map: {mounted}"
        )
    secrets_resources = blocks(root, type_="google_secret_manager_secret")
    if not secrets_resources or any(b.body.get("for_each") != "${var.secret_ids}" for b in secrets_resources):
        violations.append("google_secret_manager_secret must be for_each = var.secret_ids (the mounted ids)")
    charter = module_locals(modules / "charter")
    modules_called = {b.name: b.body for b in blocks(root, kind="module")}
    if "module.run_services.service_secrets" not in str(charter.get("secret_ids")) or (
        (modules_called.get("secrets") or {}).get("secret_ids") != "${local.secret_ids}"
    ):
        violations.append(
            "modules/charter must pass the ids of run_services' service_secrets to modules/secrets"
        )
    if (modules_called.get("iam") or {}).get("service_secrets") != "${module.run_services.service_secrets}":
        violations.append("modules/charter must pass run_services' service_secrets to modules/iam")
    grants = [
        b
        for b in blocks(root, type_="google_secret_manager_secret_iam_member")
        if b.path.parent == modules / "iam"
    ]
    sources = " ".join(resolve_for_each_source(b) for b in grants)
    if not grants or "var.service_secrets" not in sources or "values(secrets)" not in sources:
        violations.append("iam secret grants must be for_each over the secret ids of var.service_secrets")
    if "reads_secrets" in module_locals(modules / "iam"):
        violations.append("iam local.reads_secrets is a second secret map; grants follow service_secrets")
    for block in blocks(root):
        role = str(block.body.get("role", ""))
        if not role.startswith("roles/secretmanager."):
            continue
        if (
            block.type != "google_secret_manager_secret_iam_member"
            or role != "roles/secretmanager.secretAccessor"
        ):
            violations.append(f"{block.address}: {role} granted outside per-secret accessor grants")
    for version in blocks(root, type_="google_secret_manager_secret_version"):
        data = str(version.body.get("secret_data", ""))
        generated = (
            "vault_key_secret" in str(version.body.get("secret"))
            and "random_bytes." in data
            and not re.search(r"\bvar\.(?!vault_key_generations\b)", data)
        )
        if not generated:
            violations.append(
                f"{version.address}: the only secret value in Terraform is the generated vault key"
            )
    secrets_dir = modules / "secrets"
    if module_locals(secrets_dir).get("vault_key_secret") != GENERATED_SECRET:
        violations.append(f"modules/secrets local.vault_key_secret must be {GENERATED_SECRET!r}")
    random_bytes = blocks(root, type_="random_bytes")
    if not random_bytes or any(b.body.get("length") != 32 for b in random_bytes):
        violations.append("the vault key must be random_bytes of length 32 (a Fernet key)")
    for path in tf_files(root):
        if path.parent != secrets_dir and re.search(r"\bsecret_data\b", path.read_text(encoding="utf-8")):
            violations.append(f"{path}: secret_data outside the generated vault key")
    return violations


def check_secret_env(root: Path) -> list[str]:
    """Env vars named like TOKEN/SECRET/KEY come from Secret Manager (``secret_key_ref``), never a value."""
    violations = []
    for service in blocks(root, type_="google_cloud_run_v2_service"):
        local_values = module_locals(service.path.parent)
        uses_secret_ref = False
        for template in sub_blocks(service.body, "template"):
            for container in sub_blocks(template, "containers"):
                for env in sub_blocks(container, "env"):
                    name = str(env.get("name", ""))
                    if "value" in env and (
                        _SENSITIVE_NAME.search(name) or _SECRET_REFERENCE.search(str(env["value"]))
                    ):
                        violations.append(
                            f"{service.address}: env {name} is a plain value; use secret_key_ref"
                        )
                    uses_secret_ref |= _has_secret_ref(env)
                for content, for_each in dynamic_blocks(container, "env"):
                    if "value" in content:
                        plain: dict[str, Any] = {}
                        for ref in local_refs(for_each):
                            plain |= env_entries(local_values.get(ref))
                        sensitive = [
                            n
                            for n, v in plain.items()
                            if _SENSITIVE_NAME.search(n) or _SECRET_REFERENCE.search(str(v))
                        ]
                        if sensitive or _SECRET_REFERENCE.search(for_each):
                            violations.append(
                                f"{service.address}: dynamic env over {for_each} sets plain values "
                                f"for secret-like names {sorted(sensitive)}"
                            )
                    if "value_source" in content:
                        if not _has_secret_ref(content):
                            violations.append(f"{service.address}: value_source without secret_key_ref")
                        uses_secret_ref = True
        if not uses_secret_ref:
            violations.append(f"{service.address}: secrets are not mounted through secret_key_ref")
    return violations


def env_entries(value: Any) -> dict[str, Any]:
    """NAME => value of an env map local: flat (common_env) or per target (service_env)."""
    if not isinstance(value, dict):
        return {}
    if value and all(isinstance(v, dict) for v in value.values()):
        return {name: v for per_target in value.values() for name, v in per_target.items()}
    return dict(value)


def _has_secret_ref(env: dict[str, Any]) -> bool:
    source = _first(sub_blocks(env, "value_source"))
    ref = _first(sub_blocks(source, "secret_key_ref"))
    return bool(ref.get("secret")) and bool(ref.get("version"))


# --- terraform: services, state, monitoring ---------------------------------------------------


def check_run_services(root: Path) -> list[str]:
    """Layer selection by env, one image, candidate/stable traffic (timeouts: check_timeout_nesting)."""
    violations = []
    for service in blocks(root, type_="google_cloud_run_v2_service"):
        template = _first(sub_blocks(service.body, "template"))
        container = _first(sub_blocks(template, "containers"))
        env = {str(e.get("name")): str(e.get("value")) for e in sub_blocks(container, "env")}
        if env.get("FUNCTION_TARGET") != "${each.key}":
            violations.append(f"{service.address}: FUNCTION_TARGET must be the target name (each.key)")
        if env.get("FUNCTION_SIGNATURE_TYPE") != "${each.value.kind}":
            violations.append(f"{service.address}: FUNCTION_SIGNATURE_TYPE must be the target kind")
        if container.get("image") != "${var.image}":
            violations.append(f"{service.address}: every service must run var.image")
        traffic = [block for block, _ in nested(service.body, "traffic")]
        latest = [t for t in traffic if t.get("type") == "TRAFFIC_TARGET_ALLOCATION_TYPE_LATEST"]
        candidate = [
            t
            for t in traffic
            if t.get("type") == "TRAFFIC_TARGET_ALLOCATION_TYPE_REVISION"
            and "candidate_tag" in str(t.get("tag"))
            and "candidate_tag" in str(t.get("revision"))
        ]
        if not latest or not candidate:
            violations.append(
                f"{service.address}: traffic needs a tagged candidate REVISION block and LATEST"
            )
        if not any("candidate_percent" in str(t.get("percent")) for t in candidate):
            violations.append(f"{service.address}: candidate traffic percent must be var.candidate_percent")
    return violations


def load_collections(root: Path) -> list[dict[str, Any]]:
    """The collections of ``shared_lib/config/collections.json`` of the tree."""
    data: dict[str, Any] = json.loads((root / COLLECTIONS).read_text(encoding="utf-8"))
    return list(data["collections"])


def catalogue_ttl_policies(root: Path) -> dict[str, str]:
    """What the catalogue asks for: collection group (last collection id) -> TTL field."""
    return {
        c["path"].split("/")[-2]: c["ttl_field"]
        for c in load_collections(root)
        if c.get("ttl_field") is not None
    }


def evaluate_local(root: Path, module: Path, name: str) -> Any:
    """``local.<name>`` of ``module`` as ``terraform console`` computes it (offline).

    Only the module's locals-only files are copied, with every JSON file of ``shared_lib``
    the locals may ``file()``, so no provider is needed. Raises ``RuntimeError`` when
    terraform is missing or fails (an invalid expression, a group with conflicting fields).
    """
    binary = shutil.which("terraform")
    if binary is None:
        raise RuntimeError("terraform binary not found")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / module.relative_to(root)
        work.mkdir(parents=True)
        for path in sorted(module.glob("*.tf")):
            if set(parse_hcl(path)) == {"locals"}:
                shutil.copy2(path, work / path.name)
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
    # An invalid expression is reported in stderr while the exit status stays 0.
    errors = [line.strip() for line in result.stderr.splitlines() if line.strip()]
    if result.returncode != 0 or any(line.startswith("Error:") for line in errors):
        raise RuntimeError(f"terraform console on {module.name}: {' '.join(errors)}")
    return json.loads(json.loads(result.stdout))


def terraform_ttl_policies(root: Path) -> tuple[dict[str, str], list[str]]:
    """Collection group -> field of every ``google_firestore_field`` with a ``ttl_config``, and problems."""
    policies: dict[str, str] = {}
    problems: list[str] = []
    for field in blocks(root, type_="google_firestore_field"):
        if not sub_blocks(field.body, "ttl_config"):
            continue
        if "for_each" not in field.body:
            policies[str(field.body.get("collection"))] = str(field.body.get("field"))
            continue
        refs = local_refs(str(field.body["for_each"]))
        if len(refs) != 1:
            problems.append(f"{field.address}: for_each is not one module local")
            continue
        try:
            value = evaluate_local(root, field.path.parent, refs.pop())
        except RuntimeError as exc:
            problems.append(f"{field.address}: {exc}")
            continue
        keys = list(value) if isinstance(value, dict | list) else []
        if field.body.get("collection") != "${each.key}":
            problems.append(f"{field.address}: collection must be each.key")
        for key in keys:
            if field.body.get("field") == "${each.value}" and isinstance(value, dict):
                policies[str(key)] = str(value[key])
            else:
                policies[str(key)] = str(field.body.get("field"))
    return policies, problems


# --- terraform: what each service receives (env, THREADS, timeouts) -------------------------


def tfvars(root: Path, env: str) -> dict[str, Any]:
    """The parsed ``terraform/envs/<env>.tfvars`` (empty if missing)."""
    path = root / ROOT_DIR / f"{env}.tfvars"
    return parse_hcl(path) if path.is_file() else {}


def effective_sizing(root: Path, env: str) -> dict[str, dict[str, Any]]:
    """Target => sizing in ``env``: run_services' base and layer sizing, then the tfvars overrides."""
    found = module_locals(root / RUN_SERVICES)
    base = found.get("base_sizing") or {}
    layer = found.get("layer_sizing") or {}
    overrides = tfvars(root, env).get("service_sizing") or {}
    return {
        target: base
        | (layer.get(target) or {})
        | {k: v for k, v in (overrides.get(target) or {}).items() if v is not None}
        for target in load_topology(root)["targets"]
    }


def resolve_number(value: Any, found: dict[str, Any], sizing: dict[str, dict[str, Any]]) -> float | None:
    """A number, or one written as ``tostring(local.NAME)`` / ``tostring(local.sizing.T.KEY)``."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    text = str(value)
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    match = re.fullmatch(r"\$\{(?:tostring\()?local\.sizing(?:\.(\w+)|\[\"(\w+)\"\])\.(\w+)\)?\}", text)
    if match:
        number = (sizing.get(match.group(1) or match.group(2)) or {}).get(match.group(3))
        return number if isinstance(number, int | float) else None
    match = re.fullmatch(r"\$\{(?:tostring\()?local\.(\w+)\)?\}", text)
    if match:
        number = found.get(match.group(1))
        return number if isinstance(number, int | float) and not isinstance(number, bool) else None
    return None


def _product_sources(root: Path) -> str:
    return "\n".join(
        path.read_text(encoding="utf-8")
        for directory in ("shared_lib", "functions")
        for path in sorted((root / directory).rglob("*.py"))
    )


# The two env vars written as static blocks: they pick the layer (the Dockerfile CMD reads them).
_LAYER_SELECTION = frozenset({"FUNCTION_TARGET", "FUNCTION_SIGNATURE_TYPE"})


def check_service_env(root: Path) -> list[str]:
    """run_services says what each service receives in its literal env maps, with names the code reads.

    ``common_env`` plus ``service_env[target]`` are the plain env vars, ``service_secrets[target]``
    the secret ones (names written out, never derived from the secret id); every target has an
    entry in both maps, and the container's env blocks use exactly these maps.
    """
    topology = load_topology(root)
    found = module_locals(root / RUN_SERVICES)
    common = found.get("common_env")
    plain = found.get("service_env")
    secrets = found.get("service_secrets")
    if not isinstance(common, dict) or not isinstance(plain, dict) or not isinstance(secrets, dict):
        return ["run_services must have literal locals common_env, service_env and service_secrets"]
    violations = []
    for name, value in (("service_env", plain), ("service_secrets", secrets)):
        if set(value) != set(topology["targets"]):
            violations.append(f"run_services local.{name} must name every topology target: {sorted(value)}")
        violations += [
            f"run_services local.{name}[{target}] is not a literal map"
            for target, entries in value.items()
            if not isinstance(entries, dict)
        ]
    if violations:
        return violations
    if "CHARTER_FLAGS_DOCUMENT" not in common:
        violations.append("common_env must set CHARTER_FLAGS_DOCUMENT")
    for target, wanted in EXPECTED_PLAIN_ENV.items():
        for name, value in wanted.items():
            if plain.get(target, {}).get(name) != value:
                violations.append(f"service_env[{target}] must set {name} = {value!r}")
    for target, entries in plain.items():
        violations += [
            f"service_env[{target}].{name} repeats common_env" for name in sorted(set(entries) & set(common))
        ]
        clash = set(entries) & set(secrets.get(target, {}))
        violations += [f"{target}: {name} is both a plain and a secret env var" for name in sorted(clash)]
    source = _product_sources(root)
    names = set(common) | {n for e in plain.values() for n in e} | {n for e in secrets.values() for n in e}
    for name in sorted(names - set(RUNTIME_ENV)):
        if f'"{name}"' not in source and f"'{name}'" not in source:
            violations.append(
                f"env var {name} is set by Terraform but read nowhere in shared_lib or functions"
            )
    for service in blocks(root, type_="google_cloud_run_v2_service"):
        container = _first(sub_blocks(_first(sub_blocks(service.body, "template")), "containers"))
        outside = {str(e.get("name")) for e in sub_blocks(container, "env")} - _LAYER_SELECTION
        if outside:
            violations.append(f"{service.address}: env outside the maps: {sorted(outside)}")
        dynamic = dynamic_blocks(container, "env")
        plain_blocks = [(c, f) for c, f in dynamic if "value" in c]
        secret_blocks = [(c, f) for c, f in dynamic if "value_source" in c]
        if [f for _, f in plain_blocks] != ["${merge(local.common_env, local.service_env[each.key])}"]:
            violations.append(
                f"{service.address}: plain env must be merge(local.common_env, local.service_env[each.key])"
            )
        if [f for _, f in secret_blocks] != ["${local.service_secrets[each.key]}"]:
            violations.append(
                f"{service.address}: secret env must be for_each = local.service_secrets[each.key]"
            )
        for content, _ in secret_blocks:
            ref = _first(sub_blocks(_first(sub_blocks(content, "value_source")), "secret_key_ref"))
            if content.get("name") != "${env.key}" or ref.get("secret") != "${env.value}":
                violations.append(
                    f"{service.address}: a secret env var is named by the map key (the env var name) "
                    "and reads the map value (the secret id), written out, not derived"
                )
        for content, _ in plain_blocks:
            if content.get("name") != "${env.key}" or content.get("value") != "${env.value}":
                violations.append(f"{service.address}: plain env must be name = env.key, value = env.value")
    return violations


def check_threads(root: Path) -> list[str]:
    """THREADS of every target equals its Cloud Run concurrency, in every environment."""
    found = module_locals(root / RUN_SERVICES)
    plain = found.get("service_env") or {}
    violations = []
    for env in ENVIRONMENTS:
        sizing = effective_sizing(root, env)
        for target in load_topology(root)["targets"]:
            threads = resolve_number((plain.get(target) or {}).get("THREADS"), found, sizing)
            concurrency = sizing[target].get("concurrency")
            if threads is None or threads != concurrency:
                violations.append(
                    f"{env}: THREADS of {target} is {threads!r}, its concurrency is {concurrency!r}"
                )
    services = blocks(root, type_="google_cloud_run_v2_service")
    if not any(_has_precondition(s, ("THREADS", "concurrency", "==")) for s in services):
        violations.append("google_cloud_run_v2_service needs a precondition THREADS == concurrency")
    return violations


def check_timeout_nesting(root: Path) -> list[str]:
    """LLM retry budget < Cloud Run request timeout < Pub/Sub ack deadline, on the same numbers.

    The ack deadline is topology.json's; push targets are the targets of its subscriptions (ingress
    and admin are HTTP and only keep the first rule). LLM targets are those that mount
    ANTHROPIC_API_KEY; each gets CHARTER_LLM_RETRY_BUDGET.
    """
    topology = load_topology(root)
    ack = topology["retry"]["ack_deadline_seconds"]
    push = {s["target"] for s in topology["subscriptions"].values()}
    found = module_locals(root / RUN_SERVICES)
    plain = found.get("service_env") or {}
    secrets = found.get("service_secrets") or {}
    llm = {t for t, entries in secrets.items() if "ANTHROPIC_API_KEY" in (entries or {})}
    budgeted = {t for t, entries in plain.items() if "CHARTER_LLM_RETRY_BUDGET" in (entries or {})}
    violations = [
        f"{t} calls the LLM but gets no CHARTER_LLM_RETRY_BUDGET" for t in sorted(llm - budgeted)
    ] + [f"{t} gets CHARTER_LLM_RETRY_BUDGET but does not call the LLM" for t in sorted(budgeted - llm)]
    for env in ENVIRONMENTS:
        sizing = effective_sizing(root, env)
        for target in sorted(topology["targets"]):
            timeout = sizing[target].get("timeout_seconds")
            if not isinstance(timeout, int):
                violations.append(f"{env}: timeout of {target} is not a number: {timeout!r}")
                continue
            if target in push and not timeout < ack:
                violations.append(
                    f"{env}: request timeout of {target} ({timeout}s) must be below the ack deadline ({ack}s)"
                )
            if target in budgeted:
                budget = resolve_number(plain[target]["CHARTER_LLM_RETRY_BUDGET"], found, sizing)
                if budget is None or not 0 < budget < timeout:
                    violations.append(
                        f"{env}: LLM retry budget of {target} ({budget!r}s) must be below its timeout ({timeout}s)"
                    )
    services = blocks(root, type_="google_cloud_run_v2_service")
    wanted = {
        "timeout < ack deadline": ("timeout_seconds <", "ack_deadline_seconds", "push_targets"),
        "LLM budget < timeout": ("CHARTER_LLM_RETRY_BUDGET", "< local.sizing[each.key].timeout_seconds"),
    }
    for rule, needles in wanted.items():
        if not any(_has_precondition(s, needles) for s in services):
            violations.append(f"google_cloud_run_v2_service needs a precondition {rule}")
    return violations


def _has_precondition(service: Block, needles: tuple[str, ...]) -> bool:
    conditions = [
        str(p.get("condition", ""))
        for lifecycle in sub_blocks(service.body, "lifecycle")
        for p in sub_blocks(lifecycle, "precondition")
    ]
    return any(all(n in condition for n in needles) for condition in conditions)


def check_firestore(root: Path) -> list[str]:
    """Native database, composite indexes, and a TTL policy on the right field for every collection
    group the catalogue of collections gives a TTL field (and the four that always expire)."""
    violations = []
    databases = blocks(root, type_="google_firestore_database")
    if not any(d.body.get("type") == "FIRESTORE_NATIVE" for d in databases):
        violations.append("no native-mode google_firestore_database")
    declared, violations_ttl = terraform_ttl_policies(root)
    violations += violations_ttl
    wanted = {group: "expires_at" for group in TTL_COLLECTION_GROUPS} | catalogue_ttl_policies(root)
    missing = {group for group, field in wanted.items() if group not in declared}
    if missing:
        violations.append(f"no TTL policy on expires_at for collection groups {sorted(missing)}")
    violations += [
        f"TTL policy of collection group {group!r} is on {declared[group]!r}, the catalogue says {field!r}"
        for group, field in sorted(wanted.items())
        if group in declared and declared[group] != field
    ]
    index_collections = set()
    for index in blocks(root, type_="google_firestore_index"):
        for spec in (module_locals(index.path.parent).get("indexes") or {}).values():
            index_collections.add(spec.get("collection"))
    missing_indexes = {"observability", "turns"} - index_collections
    if missing_indexes:
        violations.append(f"no composite index for {sorted(missing_indexes)}")
    return violations


def check_alert_policies(root: Path) -> list[str]:
    """Every alert policy comes from the one threshold map ``local.alerts``, with the seed values.

    One ``google_monitoring_alert_policy`` with ``for_each = local.alerts``: its threshold, title
    and PromQL all read ``each.value.threshold``, so the map is the only place a threshold is written.
    """
    violations = []
    policies = blocks(root, type_="google_monitoring_alert_policy")
    if len(policies) != 1 or policies[0].body.get("for_each") != "${local.alerts}":
        violations.append(
            "alert policies must be one google_monitoring_alert_policy with for_each = local.alerts, "
            f"found {[b.address for b in policies]}"
        )
    alerts = module_locals(root / MONITORING).get("alerts")
    alerts = alerts if isinstance(alerts, dict) else {}
    violations += [f"missing alert {name!r} in local.alerts" for name in SEED_ALERTS if name not in alerts]
    violations += [
        f"alert {name!r} has no seed threshold in the tests" for name in alerts if name not in SEED_ALERTS
    ]
    for name, seed in SEED_ALERTS.items():
        threshold = (alerts.get(name) or {}).get("threshold")
        if name in alerts and threshold != seed:
            violations.append(f"local.alerts.{name}.threshold is {threshold!r}, the seed says {seed!r}")
    for policy in policies:
        body = policy.body
        if "local.channels" not in str(body.get("notification_channels", "")):
            violations.append(f"{policy.address}: no notification channels")
        if "each.value.threshold" not in str(body.get("display_name")):
            violations.append(f"{policy.address}: the display name must show each.value.threshold")
        conditions = _first(sub_blocks(body, "conditions"))
        threshold_conditions = [c for c, _ in nested(conditions, "condition_threshold")]
        promql = [c for c, _ in nested(conditions, "condition_prometheus_query_language")]
        if not threshold_conditions or any(
            c.get("threshold_value") != "${each.value.threshold}" for c in threshold_conditions
        ):
            violations.append(f"{policy.address}: threshold_value must be each.value.threshold")
        if not promql or any("each.value.threshold" not in str(c.get("query")) for c in promql):
            violations.append(f"{policy.address}: the PromQL query must compare against each.value.threshold")
    if "promql" in (alerts.get("daily_cost") or {}) and "%v" not in str(alerts["daily_cost"]["promql"]):
        violations.append("daily_cost PromQL must take the threshold (the budget variable) through format")
    deadletter = " ".join(walk_strings(alerts.get("deadletter_backlog") or {}))
    if "num_undelivered_messages" not in deadletter or "deadletter_subscription" not in deadletter:
        violations.append("deadletter_backlog must watch num_undelivered_messages of the DLQ subscription")
    moved = {
        (str(m.get("from")), str(m.get("to")))
        for path in sorted((root / MONITORING).glob("*.tf"))
        for m in parse_hcl(path).get("moved", [])
    }
    violations += [
        f"no moved block keeps the existing policy {name!r} in place"
        for name in SEED_ALERTS
        if (
            f"${{google_monitoring_alert_policy.{name}}}",
            f'${{google_monitoring_alert_policy.this["{name}"]}}',
        )
        not in moved
    ]
    metrics = {b.name for b in blocks(root, type_="google_logging_metric")}
    violations += [
        f"missing log-based metric {m!r}"
        for m in ("llm_latency", "llm_cost", "tool_errors", "blocks")
        if m not in metrics
    ]
    return violations


def check_bigquery(root: Path) -> list[str]:
    """Dataset/table from topology.json; the schema file is the one generated from the record model."""
    from shared_lib.ops.schema import bigquery_schema

    violations = []
    schema_path = root / "terraform" / "modules" / "bigquery" / "turn_events_schema.json"
    schema = json.loads(schema_path.read_text(encoding="utf-8"))
    if schema != bigquery_schema():
        violations.append("turn_events_schema.json differs from shared_lib.ops.schema.bigquery_schema()")
    tables = blocks(root, type_="google_bigquery_table")
    if not any(
        "turn_events_schema.json" in str(t.body.get("schema"))
        and "bigquery.table" in str(t.body.get("table_id"))
        for t in tables
    ):
        violations.append(
            "the turn events table must use turn_events_schema.json and topology bigquery.table"
        )
    datasets = blocks(root, type_="google_bigquery_dataset")
    if not any("bigquery.dataset" in str(d.body.get("dataset_id")) for d in datasets):
        violations.append("the dataset id must come from topology bigquery.dataset")
    roles = {
        str(b.body.get("role")) for b in blocks(root) if "pubsub_service_agent" in str(b.body.get("member"))
    }
    if "roles/bigquery.dataEditor" not in roles:
        violations.append("the Pub/Sub service agent cannot write to BigQuery (roles/bigquery.dataEditor)")
    return violations


def check_scheduler(root: Path) -> list[str]:
    """Heartbeat, cost check and maintenance jobs call admin with an OIDC token."""
    violations = []
    jobs = blocks(root, type_="google_cloud_scheduler_job")
    if not jobs:
        return ["no google_cloud_scheduler_job"]
    for job in jobs:
        target = _first(sub_blocks(job.body, "http_target"))
        oidc = _first(sub_blocks(target, "oidc_token"))
        if "scheduler" not in str(oidc.get("service_account_email")) or "admin_url" not in str(
            oidc.get("audience")
        ):
            violations.append(f"{job.address}: needs an OIDC token of the scheduler account for admin")
        names = module_locals(job.path.parent).get("jobs") or {}
        if not {"heartbeat", "cost-check", "maintenance"} <= set(names):
            violations.append(f"{job.address}: jobs must include heartbeat, cost-check and maintenance")
        if (names.get("heartbeat") or {}).get("schedule") != "*/5 * * * *":
            violations.append(f"{job.address}: heartbeat must run every 5 minutes")
    return violations


def check_flags_document(root: Path) -> list[str]:
    """config/flags holds the environment's flags file as one string field (shared_lib.flags' shape).

    The file is the one the environment names (``flags_file``, no default). Fields:
    ``document_json`` (the file), ``version``, ``sha256`` (of the file) and ``updated_by = "terraform"``.
    """
    docs = blocks(root, type_="google_firestore_document")
    flags = [d for d in docs if d.body.get("collection") == "config" and d.body.get("document_id") == "flags"]
    if not flags:
        return ["no google_firestore_document config/flags"]
    fields = str(flags[0].body.get("fields", ""))
    keys = set(re.findall(r"[{,]\s*(\w+)\s*=\s*\{\s*stringValue\s*=", fields))
    wanted = {"document_json", "version", "sha256", "updated_by"}
    violations = [f"{flags[0].address}: fields lack {k!r}" for k in sorted(wanted - keys)]
    if not re.search(r"document_json = \{stringValue = local\.\w+\}", fields):
        violations.append(f"{flags[0].address}: document_json must be the flags file text")
    if not re.search(r"sha256 = \{stringValue = sha256\(", fields) or '"terraform"' not in fields:
        violations.append(f"{flags[0].address}: sha256 must hash the file and updated_by be terraform")
    variables = {
        name: body
        for p in tf_files(root)
        if p.parent == flags[0].path.parent
        for v in parse_hcl(p).get("variable", [])
        for name, body in v.items()
    }
    if "flags_file" not in variables:
        violations.append("modules/flags has no flags_file variable")
    elif "default" in variables["flags_file"] or variables["flags_file"].get("nullable") is not False:
        # one file per environment: no default another environment could fall back to
        violations.append("modules/flags: flags_file must have no default and be nullable = false")
    expression = str(module_locals(flags[0].path.parent).get("flags_file"))
    if expression != "${var.flags_file}":
        violations.append(f"modules/flags: local.flags_file must be var.flags_file, is {expression}")
    return violations


def check_env_root(root: Path) -> list[str]:
    """One root, terraform/envs: GCS backend, pinned providers, validated variables, env guard, outputs."""
    required_validations = ("project_id", "region", "env", "image", "daily_llm_budget_usd", "service_sizing")
    directory = root / ROOT_DIR
    violations = []
    roots = sorted(
        {
            p.parent
            for p in tf_files(root)
            for entry in parse_hcl(p).get("terraform", [])
            if "backend" in entry
        }
    )
    if roots != [directory]:
        violations.append(f"the one root with a backend must be {ROOT_DIR}, found {roots}")
    nested_roots = (
        sorted(p for p in directory.iterdir() if p.is_dir() and any(p.glob("*.tf")))
        if directory.is_dir()
        else []
    )
    violations += [f"{p}: a second root under {ROOT_DIR}" for p in nested_roots]
    if not directory.is_dir():
        return [*violations, f"missing root {directory}"]
    parsed = [parse_hcl(p) for p in sorted(directory.glob("*.tf"))]
    terraform = [t for doc in parsed for t in doc.get("terraform", [])]
    backends = [b for t in terraform for b in t.get("backend", [])]
    if not any("gcs" in b for b in backends):
        violations.append('root: no backend "gcs" block')
    providers = {
        name: spec
        for t in terraform
        for block in t.get("required_providers", [])
        for name, spec in block.items()
        if isinstance(spec, dict)
    }
    if not str((providers.get("google") or {}).get("version", "")).startswith("~> 6."):
        violations.append("root: required_providers must pin hashicorp/google ~> 6.x")
    if (providers.get("random") or {}).get("source") != "hashicorp/random":
        violations.append("root: required_providers must pin hashicorp/random (the vault key)")
    variables = {name: body for doc in parsed for v in doc.get("variable", []) for name, body in v.items()}
    for name in required_validations:
        if not sub_blocks(variables.get(name, {}), "validation"):
            violations.append(f"root: variable {name} has no validation block")
    without_default = {
        name for name, body in variables.items() if isinstance(body, dict) and "default" not in body
    }
    if without_default != ENV_SPECIFIC_VARIABLES | COMMAND_LINE_VARIABLES:
        violations.append(
            "root: exactly the environment-specific and command-line variables have no default, "
            f"found {sorted(without_default)}"
        )
    guard = [
        b
        for b in blocks(root, type_="terraform_data")
        if b.path.parent == directory
        and "var.env" in str(b.body.get("triggers_replace"))
        and any(lc.get("prevent_destroy") is True for lc in sub_blocks(b.body, "lifecycle"))
    ]
    if not guard:
        violations.append(
            "root: no environment guard (terraform_data replaced on a new env, prevent_destroy)"
        )
    outputs = {name for doc in parsed for o in doc.get("output", []) for name in o}
    violations += [
        f"root: missing output {o}"
        for o in ("ingress_url", "admin_url", "topic_names", "rollout", "serving_tag")
        if o not in outputs
    ]
    if not (directory / "README.md").is_file():
        violations.append("root: no README.md")
    return violations


def check_env_files(root: Path) -> list[str]:
    """Each environment is <env>.tfvars (its choices) and <env>.gcs.tfbackend (its state prefix)."""
    directory = root / ROOT_DIR
    declared = {
        name
        for path in sorted(directory.glob("*.tf"))
        for v in parse_hcl(path).get("variable", [])
        for name in v
    }
    violations = []
    values: dict[str, dict[str, Any]] = {}
    for env in ENVIRONMENTS:
        path = directory / f"{env}.tfvars"
        backend = directory / f"{env}.gcs.tfbackend"
        if not path.is_file() or not backend.is_file():
            violations.append(f"{env}: needs {path.name} and {backend.name} in {ROOT_DIR}")
            continue
        values[env] = tfvars(root, env)
        if parse_hcl(backend).get("prefix") != f"charter/{env}":
            violations.append(f'{env}: {backend.name} must set prefix = "charter/{env}"')
        missing = ENV_SPECIFIC_VARIABLES - set(values[env])
        violations += [f"{env}: {path.name} does not set {name}" for name in sorted(missing)]
        violations += [
            f"{env}: {path.name} sets undeclared {name}" for name in sorted(set(values[env]) - declared)
        ]
        violations += [
            f"{env}: {path.name} sets {name}, which the pipeline passes on the command line"
            for name in sorted(
                set(values[env])
                & (COMMAND_LINE_VARIABLES | {"candidate_tag", "candidate_percent", "stable_tag"})
            )
        ]
        if values[env].get("env") != env:
            violations.append(f"{env}: {path.name} sets env = {values[env].get('env')!r}")
        budget = values[env].get("daily_llm_budget_usd")
        if not isinstance(budget, int | float) or not 0 < budget <= SEED_DAILY_BUDGET_USD:
            violations.append(
                f"{env}: daily_llm_budget_usd {budget!r} must be above 0 and at most the seed's 33 USD"
            )
        generations = values[env].get("vault_key_generations")
        if not isinstance(generations, list) or not generations or len(set(generations)) != len(generations):
            violations.append(f"{env}: vault_key_generations must name at least one generation, each once")
    for env in ("stg", "prod"):
        if env in values and values[env].get("deletion_protection") is not True:
            violations.append(f"{env}: deletion_protection must be true")
    if "prod" in values:
        prod = values["prod"]
        if prod.get("firestore_pitr") is not True:
            violations.append("prod: firestore_pitr must be true")
        sizing = prod.get("service_sizing") or {}
        violations += [
            f"prod: {target} must keep a warm instance (min_instances >= 1)"
            for target in WARM_IN_PROD
            if not (sizing.get(target) or {}).get("min_instances", 0) >= 1
        ]
    return violations


# --- cloudbuild.yaml, Dockerfile, .dockerignore --------------------------------------------------


def check_cloudbuild(root: Path) -> list[str]:
    """Step ids in pipeline order, image tagged with $COMMIT_SHA, logging and timeout set."""
    config = yaml.safe_load((root / "cloudbuild.yaml").read_text(encoding="utf-8"))
    steps = config.get("steps") or []
    ids = [step.get("id") for step in steps]
    violations = [] if len(ids) == len(set(ids)) and None not in ids else ["every step needs a unique id"]
    missing = [i for i in PIPELINE_ORDER if i not in ids]
    violations += [f"missing step {i!r}" for i in missing]
    positions = [ids.index(i) for i in PIPELINE_ORDER if i in ids]
    if positions != sorted(positions):
        violations.append(f"steps out of order: expected {' < '.join(PIPELINE_ORDER)}, got {ids}")
    by_id = {step.get("id"): step for step in steps}

    def text(step_id: str) -> str:
        step = by_id.get(step_id) or {}
        return " ".join(str(step.get(k, "")) for k in ("script", "args", "entrypoint"))

    if not re.search(r":\$\{?COMMIT_SHA\}?", text("build")):
        violations.append("build step must tag the image with $COMMIT_SHA")
    if "make lint" not in text("lint"):
        violations.append("lint step must run make lint")
    if "make test" not in text("test"):
        violations.append("test step must run make test")
    if "infra.smoke_runner" not in text("smoke"):
        # the runner sends the signed smoke webhook (infra.webhook_sender) and checks every layer's
        # revision in the turn's record (tests/static/revision_checks.py checks the rest)
        violations.append("smoke step must run a signed smoke turn with infra.smoke_runner")
    if "candidate_percent=100" not in text("traffic"):
        violations.append("traffic step must move 100 % to the candidate")
    for flag_step in ("flags-shadow", "flags-canary"):
        if "_ROLLOUT_STAGE" not in text(flag_step):
            violations.append(f"{flag_step} must be gated by _ROLLOUT_STAGE")
    violations += _terraform_invocations(steps)
    if (config.get("options") or {}).get("logging") != "CLOUD_LOGGING_ONLY":
        violations.append("options.logging must be CLOUD_LOGGING_ONLY")
    if not config.get("timeout"):
        violations.append("build timeout is not set")
    return violations


_TFVARS = re.compile(r'-var-file="?\$\{_ENV\}\.tfvars"?(\s|$)')
_TFBACKEND = re.compile(r'-backend-config="?\$\{_ENV\}\.gcs\.tfbackend"?(\s|$)')


def _terraform_invocations(steps: list[dict[str, Any]]) -> list[str]:
    """Terraform steps run in the one root and pick the environment's tfvars and backend files.

    Every ``terraform init`` reads ``${_ENV}.gcs.tfbackend``; every plan and apply reads
    ``${_ENV}.tfvars`` (except applying a saved plan, which takes no variables); ``env`` is never
    given on the command line (it would override the tfvars file).
    """
    violations = []
    for step in steps:
        script = str(step.get("script", ""))
        commands = re.sub(r"\\\n\s*", " ", script).splitlines()
        invocations = [c for c in commands if re.search(r"\bterraform\s+(init|plan|apply)\b", c)]
        if not invocations:
            continue
        step_id = step.get("id")
        if step.get("dir") != str(ROOT_DIR):
            violations.append(f"{step_id}: terraform must run in {ROOT_DIR}, runs in {step.get('dir')}")
        for command in invocations:
            if re.search(r"\bterraform\s+init\b", command) and not _TFBACKEND.search(command):
                violations.append(
                    f'{step_id}: terraform init without -backend-config="${{_ENV}}.gcs.tfbackend"'
                )
            saved_plan = re.search(r"\bterraform\s+apply\b.*\stfplan\s*$", command)
            plan_or_apply = re.search(r"\bterraform\s+(plan|apply)\b", command) and not saved_plan
            if plan_or_apply and not _TFVARS.search(command):
                violations.append(f'{step_id}: terraform plan/apply without -var-file="${{_ENV}}.tfvars"')
            if re.search(r"-var\s+\"?env=", command):
                violations.append(
                    f"{step_id}: env is given on the command line; it comes from the tfvars file"
                )
    return violations


@dataclass(frozen=True)
class DockerInstruction:
    """One Dockerfile instruction with its continuation lines joined."""

    keyword: str
    argument: str


def parse_dockerfile(text: str) -> list[DockerInstruction]:
    """Instructions of a Dockerfile (comments dropped, ``\\`` continuations joined)."""
    instructions: list[DockerInstruction] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        full = (pending + line).strip()
        pending = ""
        keyword, _, argument = full.partition(" ")
        instructions.append(DockerInstruction(keyword.upper(), argument.strip()))
    return instructions


def check_dockerfile(root: Path) -> list[str]:
    """Multi-stage, base pinned by digest, non-root numeric USER, no compilers in the final stage."""
    instructions = parse_dockerfile((root / "Dockerfile").read_text(encoding="utf-8"))
    args = {}
    for ins in instructions:
        if ins.keyword == "ARG" and "=" in ins.argument:
            name, _, value = ins.argument.partition("=")
            args[name.strip()] = value.strip()
    stages: list[list[DockerInstruction]] = []
    for ins in instructions:
        if ins.keyword == "FROM":
            stages.append([])
        if stages:
            stages[-1].append(ins)
    violations = [] if len(stages) >= 2 else ["Dockerfile must be multi-stage"]
    for stage in stages:
        image = stage[0].argument.split()[0]
        image = re.sub(r"\$\{?(\w+)\}?", lambda m: args.get(m.group(1), m.group(0)), image)
        pinned = re.search(r"@sha256:[0-9a-f]{64}$", image) or re.search(r":\d+\.\d+\.\d+[\w.-]*$", image)
        if not pinned:
            violations.append(f"base image {image} is not pinned by digest or exact version")
    final = stages[-1] if stages else []
    users = [ins.argument for ins in final if ins.keyword == "USER"]
    if not users:
        violations.append("final stage has no USER (runs as root)")
    elif not re.fullmatch(r"[1-9]\d*(:\d+)?", users[-1]) or users[-1].split(":")[0] == "0":
        violations.append(f"final USER must be a numeric non-root uid, is {users[-1]!r}")
    for ins in final:
        if ins.keyword == "RUN" and re.search(r"\b(gcc|g\+\+|clang|build-essential|make)\b", ins.argument):
            violations.append(f"final stage installs a compiler: RUN {ins.argument}")
    env_text = " ".join(ins.argument for ins in final if ins.keyword == "ENV")
    if not re.search(r"\bPORT=8080\b", env_text):
        violations.append("final stage must set ENV PORT=8080")
    cmd = " ".join(ins.argument for ins in final if ins.keyword == "CMD")
    for needle in (
        '"sh"',
        '"-c"',
        "functions-framework",
        "--source functions/main.py",
        "FUNCTION_TARGET",
        "FUNCTION_SIGNATURE_TYPE",
        "--port",
        "PORT",
    ):
        if needle not in cmd:
            violations.append(f"CMD must run functions-framework through sh -c; missing {needle}")
    copies = " ".join(ins.argument for ins in final if ins.keyword == "COPY")
    for needle in ("/opt/venv", "shared_lib", "functions"):
        if needle not in copies:
            violations.append(f"final stage does not copy {needle}")
    if stages and not any("requirements.lock" in ins.argument for ins in stages[0]):
        violations.append("builder stage must install from requirements.lock")
    violations += _bytecode_violations(final)
    return violations


def _bytecode_violations(final: list[DockerInstruction]) -> list[str]:
    """The final stage compiles the source it copies, after the copy and as root (the service
    user cannot write beside the read-only source; ``PYTHONDONTWRITEBYTECODE`` would have every
    cold start compile it again)."""
    copied = max((i for i, ins in enumerate(final) if ins.keyword == "COPY"), default=-1)
    user = next((i for i, ins in enumerate(final) if ins.keyword == "USER"), len(final))
    compiles = [
        ins.argument
        for ins in final[copied + 1 : user]
        if ins.keyword == "RUN" and "compileall" in ins.argument
    ]
    if not compiles:
        return ["final stage must compile the copied source to bytecode (compileall) before USER"]
    missing = [p for p in ("shared_lib", "functions") if not any(re.search(rf"\b{p}\b", c) for c in compiles)]
    return [f"final stage does not compile {p} to bytecode" for p in missing]


def check_dockerignore(root: Path) -> list[str]:
    """The build context leaves out the venv, git data, tests and local state."""
    patterns = {
        line.strip().rstrip("/") for line in (root / ".dockerignore").read_text(encoding="utf-8").splitlines()
    }
    return [
        f".dockerignore does not exclude {p}"
        for p in (".venv", ".git", "tests", ".charter")
        if p not in patterns
    ]


TREE_CHECKS: tuple[Callable[[Path], list[str]], ...] = (
    check_topology_source,
    check_no_hardcoded_names,
    check_topology_references,
    check_push_subscriptions,
    check_deadletter_permissions,
    check_public_access,
    check_invokers,
    check_service_accounts,
    check_publisher_grants,
    check_secret_access,
    check_secret_env,
    check_service_env,
    check_run_services,
    check_threads,
    check_timeout_nesting,
    check_firestore,
    check_alert_policies,
    check_bigquery,
    check_scheduler,
    check_flags_document,
    check_env_root,
    check_env_files,
    check_cloudbuild,
    check_dockerfile,
    check_dockerignore,
)
"""Every check except ``check_terraform_fmt`` (which needs the terraform binary)."""


# --- the deploy contract: what the settings model requires vs what Terraform provides --------


def terraform_provides(root: Path) -> dict[str, dict[str, str]]:
    """Target -> {env var -> "env" | "secret"} as run_services gives it to each Cloud Run service."""
    found = module_locals(root / RUN_SERVICES)
    common = found.get("common_env") or {}
    plain = found.get("service_env") or {}
    secrets = found.get("service_secrets") or {}
    out: dict[str, dict[str, str]] = {}
    for target in load_topology(root)["targets"]:
        provided = {name: "env" for name in (*_LAYER_SELECTION, *common, *(plain.get(target) or {}))}
        provided.update({name: "secret" for name in secrets.get(target) or {}})
        out[target] = provided
    return out


def check_deploy_contract(root: Path) -> list[str]:
    """Terraform gives every Cloud Run service exactly what the settings model says it reads.

    The expectation is derived from ``shared_lib.settings`` (``deploy_contract``): every plain
    variable and every secret (through a Secret Manager reference) a service's settings carry
    deploy metadata for, under the same name, and nothing else. Then, for dev, stg and prod,
    the settings built from exactly what Terraform provides must pass start-up validation for
    that service (every required value present).
    """
    from shared_lib.errors import ConfigError
    from shared_lib.settings import Settings

    violations = []
    provided = terraform_provides(root)
    for target, given in sorted(provided.items()):
        wanted = deploy_contract(target)
        for name in sorted(set(wanted) - set(given)):
            violations.append(f"{target}: Terraform does not provide {name} ({wanted[name]})")
        for name in sorted(set(given) - set(wanted)):
            violations.append(f"{target}: Terraform provides {name}, which its settings do not read")
        for name in sorted(set(given) & set(wanted)):
            if given[name] != wanted[name]:
                violations.append(
                    f"{target}: {name} must come as {wanted[name]}, Terraform gives {given[name]}"
                )
    for env in ("dev", "stg", "prod"):
        vars_file = tfvars(root, env)
        for target, given in sorted(provided.items()):
            environ = {name: _sample_value(name) for name in given}
            environ.update(CHARTER_ENV=str(vars_file.get("env", env)), FUNCTION_TARGET=target)
            try:
                Settings.from_env(environ)
            except ConfigError as exc:
                violations.append(f"{env}/{target}: the service would not start: {exc}")
    return violations


def _sample_value(name: str) -> str:
    """A value of the right shape for a variable Terraform provides (the contract checks names)."""
    samples = {
        "CHARTER_STORE": "firestore",
        "CHARTER_BUS": "pubsub",
        "CHARTER_LOG_JSON": "1",
        "CHARTER_TASK_BACKEND": "chatwork",
        "CHARTER_LLM_RETRY_BUDGET": "40",
        "CHARTER_PEER_HEALTH_SECONDS": "30",
        "CHARTER_EMBEDDER": "vertex",
        "CHARTER_TRACE_EXPORTER": "cloud_trace",
        "CHARTER_TRACE_SAMPLE_RATIO": "1",
        "THREADS": "8",
        "FUNCTION_SIGNATURE_TYPE": "cloudevent",
        "CHARTER_VAULT_KEY": "ZmVybmV0LWtleS1mb3ItdGhlLWRlcGxveS1jb250cmFjdA==",
    }
    return samples.get(name, f"sample-{name.lower()}")
