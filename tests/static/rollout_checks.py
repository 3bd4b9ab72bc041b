"""Static checks of the staged rollout: the environments' flags files and the pipeline's gates.

Same shape as ``charter_static_checks``: ``check_xxx(root) -> list[str]`` over the repository
rooted at ``root`` (an empty list means compliant); the mutation tests break a copy.

* ``check_env_flags``: one flags file per environment, each on the promotion ladder, and no
  environment serving the LLM arm to more people than the one before it (dev ≥ stg ≥ prod).
* ``check_flags_wiring``: each environment's tfvars names its own file, and that file exists.
* ``check_promotion_gates``: in cloudbuild.yaml every step that applies Terraform (which writes
  the committed flags file to ``config/flags``) runs after a gate step that reads the
  environment's Firestore and runs in every stage; no step writes or swaps the flags file.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from charter_static_checks import ENVIRONMENTS, tfvars

from shared_lib.errors import ConfigError
from shared_lib.flags import FlagsDocument, load_flags_file
from shared_lib.flags.stages import ladder_findings

FLAGS_DIR = Path("terraform/flags")
CLOUDBUILD = Path("cloudbuild.yaml")

_APPLY = re.compile(r"\bterraform\s+apply\b")
_GATE = re.compile(r"\bcharter\s+gate\s+(promotion|shadow|canary)\b")
_PROJECT = re.compile(r'--project\s+"?\$\{?PROJECT_ID\}?"?(\s|$)')
_ENV = re.compile(r'--env\s+"?\$\{?_ENV\}?"?(\s|$)')
# Where a script names a flags file, and what would change it.
_FLAGS_PATH = re.compile(r"(terraform/flags|\.\./flags|flags\.json)")
_WRITES = re.compile(r"(>|\btee\b|\bsed\s+-i|\bcp\b|\bmv\b|\brm\b|\bpromote\b|\bseed\b)")
_SWAPS = re.compile(r"flags_file|\bcharter\s+flags\s+(seed|override|clear-override|promote)\b")


def check_env_flags(root: Path) -> list[str]:
    """``terraform/flags`` holds exactly dev/stg/prod.json, each valid and on the ladder, in order."""
    directory = root / FLAGS_DIR
    present = sorted(p.name for p in directory.iterdir()) if directory.is_dir() else []
    wanted = [f"{env}.json" for env in ENVIRONMENTS]
    violations = [
        f"{FLAGS_DIR}/{name}: not an environment's flags file (one per environment: {', '.join(wanted)})"
        for name in present
        if name not in wanted
    ]
    docs: dict[str, FlagsDocument] = {}
    for env in ENVIRONMENTS:
        path = directory / f"{env}.json"
        if not path.is_file():
            continue
        try:
            docs[env] = load_flags_file(path)
        except ConfigError as exc:
            violations.append(f"{FLAGS_DIR}/{env}.json: {exc}".splitlines()[0])
    return violations + [f"flags ladder: {finding}" for finding in ladder_findings(docs)]


def check_flags_wiring(root: Path) -> list[str]:
    """``<env>.tfvars`` sets ``flags_file = "../flags/<env>.json"`` and that file exists."""
    violations = []
    for env in ENVIRONMENTS:
        value = tfvars(root, env).get("flags_file")
        wanted = f"../flags/{env}.json"
        if value != wanted:
            violations.append(f'{env}: {env}.tfvars must set flags_file = "{wanted}", sets {value!r}')
        elif not (root / "terraform" / "envs" / value).is_file():
            violations.append(f"{env}: {value} (from terraform/envs) does not exist")
    return violations


def _script(step: dict[str, Any]) -> str:
    return " ".join(str(step.get(k, "")) for k in ("script", "args", "entrypoint"))


def _predecessors(steps: list[dict[str, Any]]) -> dict[str, set[str]]:
    """Step id -> every step it waits for, directly or not (Cloud Build: no ``waitFor`` waits
    for all earlier steps; ``["-"]`` for none)."""
    direct: dict[str, set[str]] = {}
    for i, step in enumerate(steps):
        wait = step.get("waitFor")
        if wait is None:
            direct[step["id"]] = {s["id"] for s in steps[:i]}
        else:
            direct[step["id"]] = {w for w in wait if w != "-"}
    closed: dict[str, set[str]] = {}

    def close(step_id: str) -> set[str]:
        if step_id not in closed:
            closed[step_id] = set()
            for before in direct.get(step_id, set()):
                closed[step_id] |= {before, *close(before)}
        return closed[step_id]

    return {step_id: close(step_id) for step_id in direct}


def _gate_violations(step: dict[str, Any]) -> list[str]:
    """A gate step reads the environment's Firestore, runs in every stage and fails the build."""
    text, step_id = _script(step), step["id"]
    out = []
    if "--store firestore" not in text or not _PROJECT.search(text):
        out.append(
            f'{step_id}: the gate must read the environment\'s store (--store firestore --project "${{PROJECT_ID}}")'
        )
    if "gate promotion" in text and not _ENV.search(text):
        out.append(f'{step_id}: charter gate promotion must name the environment (--env "${{_ENV}}")')
    if "_ROLLOUT_STAGE" in text:
        out.append(f"{step_id}: the gate must run in every stage (no _ROLLOUT_STAGE condition)")
    if not re.search(r"\bset\s+-e", text) or re.search(r"\|\|\s*(true|:)|set\s+\+e", text):
        out.append(f"{step_id}: a non-zero exit of the gate must fail the build (set -e, no || true)")
    return out


def check_promotion_gates(root: Path) -> list[str]:
    """No step applies the flags file without a gate before it; no step writes or swaps the file."""
    config = yaml.safe_load((root / CLOUDBUILD).read_text(encoding="utf-8"))
    steps = [s for s in config.get("steps") or [] if s.get("id")]
    gates = [s for s in steps if _GATE.search(_script(s))]
    violations = (
        [] if gates else ["cloudbuild.yaml: no gate step (charter gate …) before the flags are applied"]
    )
    for gate in gates:
        violations += _gate_violations(gate)
    gate_ids = {g["id"] for g in gates if not _gate_violations(g)}
    before = _predecessors(steps)
    for step in steps:
        text = _script(step)
        if _APPLY.search(text) and not gate_ids & before[step["id"]]:
            violations.append(
                f"{step['id']}: applies terraform/flags/${{_ENV}}.json (terraform apply) with no passing gate step before it"
            )
        if _SWAPS.search(text):
            violations.append(
                f"{step['id']}: replaces or rewrites the committed flags file (flags_file, charter flags seed/override/promote)"
            )
        for line in str(step.get("script", "")).splitlines():
            if _FLAGS_PATH.search(line) and _WRITES.search(line):
                violations.append(f"{step['id']}: writes a flags file: {line.strip()}")
    return violations


ROLLOUT_CHECKS = (check_env_flags, check_flags_wiring, check_promotion_gates)
