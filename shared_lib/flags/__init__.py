"""Feature flags: one file per environment (``terraform/flags/{dev,stg,prod}.json``), validated here.

Terraform writes the environment's file to its Firestore document ``config/flags`` (the
whole file as the string field ``document_json``); the local stack seeds the emulator from
the development file with ``seed_flags``. Each file stands on a stage of the promotion
ladder (``stages``: legacy → shadow → canary 10 → canary 50 → llm), environments in the
order dev → stg → prod. Runtime overrides (``config/flags_override``, written by the
rollback guard or an operator through ``shared_lib.rollout.overrides``) carry an expiry,
an author and a reason, and win until they expire, so Terraform never fights them.

Who gets which brain (``evaluate``), first rule that applies wins:

============  ==============================================================  ============
reason        rule                                                            arm
============  ==============================================================  ============
ERROR         the document or the override is missing, unreadable, invalid    legacy
KILL_SWITCH   kill switch on (an active override's value wins over the file)  legacy [1]
OVERRIDE      an active override sets ``brain_mode: legacy`` (rollback)       legacy
ORG_OVERRIDE  an active override rolls back the person's organisation [2]     legacy
DENYLIST      ``user`` or ``org/user`` in ``denylist``                        legacy
ALLOWLIST     ``user`` or ``org/user`` in ``allowlist``                       llm
OVERRIDE      an active override sets another mode                            by mode
ORG_MODE      ``org_modes[org]``                                              by mode
SPLIT         global ``brain_mode: canary``                                   by bucket
DEFAULT       global ``brain_mode`` legacy / shadow / llm                     by mode
============  ==============================================================  ============

[1] the brain answers with the persona's fixed message; no LLM call, no tool execution.
[2] ``orgs[org]`` of the override, with its own expiry: the rollback guard's answer to a
regression in one tenant; the other organisations keep their arm.

By mode: ``legacy`` and ``llm`` serve that arm; ``shadow`` serves legacy and, for the
sampled share, runs the LLM arm as a dry-run candidate; ``canary`` at P % serves the LLM
arm to buckets below P and treats the legacy share like ``shadow``.

The split is sticky: ``bucket_fine(salt, org, user)`` is a stable hash in [0, 100) with
0.01 resolution, identical in every process and after a redeploy. Raising P only adds
people; lowering it removes them in bucket order; a new salt reshuffles. Shadow sampling
uses an independent hash of the same person, so it does not follow the canary buckets.

Evaluation is fail-safe: no valid document means the legacy arm, no shadow candidate (so
no tool execution by the LLM arm), reason ``ERROR``, and an alert.

The package's modules: ``document`` (the schema, the file and its stored shape),
``evaluation`` (buckets and the rules above), ``provider`` (the live, cached read),
``stages`` (the ladder, the environments' files, moving a file one stage).
This module is their public surface.
"""

from __future__ import annotations

from shared_lib.flags.document import (
    AUDIT_COLLECTION,
    FLAGS_DOC,
    OVERRIDE_DOC,
    REPO_FLAGS_FILE,
    AutoApprove,
    BrainMode,
    FlagsDocument,
    FlagsOverride,
    OrgOverride,
    RollbackGuardConfig,
    flags_store_doc,
    load_flags_file,
    parse_flags_text,
    parse_store_doc,
    seed_flags,
)
from shared_lib.flags.evaluation import Reason, bucket_fine, bucket_of, evaluate, shadow_sample_of
from shared_lib.flags.provider import MAX_CACHE_SECONDS, AlertSink, FlagsProvider, FlagsSnapshot
from shared_lib.flags.stages import (
    ENVIRONMENTS,
    LADDER,
    STAGE_NAMES,
    RefusedStep,
    Stage,
    env_flags_file,
    stage_named,
    stage_of,
)

__all__ = [
    "AUDIT_COLLECTION",
    "ENVIRONMENTS",
    "FLAGS_DOC",
    "LADDER",
    "MAX_CACHE_SECONDS",
    "OVERRIDE_DOC",
    "REPO_FLAGS_FILE",
    "STAGE_NAMES",
    "AlertSink",
    "AutoApprove",
    "BrainMode",
    "FlagsDocument",
    "FlagsOverride",
    "FlagsProvider",
    "FlagsSnapshot",
    "OrgOverride",
    "Reason",
    "RefusedStep",
    "RollbackGuardConfig",
    "Stage",
    "bucket_fine",
    "bucket_of",
    "env_flags_file",
    "evaluate",
    "flags_store_doc",
    "load_flags_file",
    "parse_flags_text",
    "parse_store_doc",
    "seed_flags",
    "shadow_sample_of",
    "stage_named",
    "stage_of",
]
