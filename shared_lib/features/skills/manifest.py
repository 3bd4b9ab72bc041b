"""The skills feature: declared, versioned, reviewed units (``shared_lib.features.skills``)."""

from __future__ import annotations

from types import MappingProxyType

from shared_lib.features.manifest import Manifest
from shared_lib.features.skills import handlers
from shared_lib.features.skills.handlers_active import registry_for
from shared_lib.runtime import Hooks
from shared_lib.tools.catalog import Binding

MANIFEST = Manifest(
    name="skills",
    summary="an organisation's own tools: proposed, tested in the sandbox, approved (seed 001 §23)",
    collections=("skills", "skill_versions"),
    tools=MappingProxyType({"propose_skill": Binding(handlers.ProposeSkillParams, handlers.propose_skill)}),
    hooks=Hooks(org_tools=registry_for),
    cli="shared_lib.features.skills.cli",
)
