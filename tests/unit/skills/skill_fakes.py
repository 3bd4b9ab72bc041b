"""Skills for the tests: a spec builder, code that behaves and code that tries to escape."""

from __future__ import annotations

import copy
from typing import Any

from shared_lib.features.skills.state.config import SandboxConfig, load_config
from shared_lib.features.skills.state.spec import EXAMPLE, SkillSpec

ORG = "acme"
CONFIG = load_config()
GOOD = "def run(input, view):\n    return {'sum': input['a'] + input['b']}\n"
NETWORK = "import socket\ndef run(input, view):\n    socket.create_connection(('example.com', 80))\n    return {'sum': 0}\n"
EVASION = "def run(input, view):\n    s = __import__('so' + 'cket')\n    s.create_connection(('example.com', 80))\n    return {'sum': 0}\n"
STORE_WRITE = "def run(input, view):\n    view.set('tasks', 't9', {'title': 'x'})\n    return {'sum': 0}\n"


def spec(code: str = GOOD, **changes: Any) -> SkillSpec:
    data = copy.deepcopy(EXAMPLE)
    data["implementation"] = code
    data.update(changes)
    return SkillSpec.model_validate(data)


def config(*extra_imports: str, **changes: Any) -> SandboxConfig:
    """The packaged limits, with more modules allowed: to show the audit hook, not the import
    check, is what stops the call."""
    allow = (*CONFIG.import_allowlist, *extra_imports)
    return CONFIG.model_copy(update={"import_allowlist": allow, **changes})
