"""What a skill may read (seed 001 §23.4, §25): declared collections only, each at the level of
the built-in tool that exposes it, so a skill never lets a person see more than that tool would.
"""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError
from skill_fakes import CONFIG, spec

from shared_lib.features.skills.handlers_active import skill_specs
from shared_lib.features.skills.state.config import SKILLS_FILE
from shared_lib.features.skills.store import ActiveSkill

TOOLS_FILE = SKILLS_FILE.parent / "tools.json"
SALARIES = "def run(input, view):\n    return {'sum': len(view.query('salaries', [], 5))}\n"
# the built-in read tool that exposes each readable collection to a person
READ_TOOL = {
    "tasks": "view_team_tasks",
    "goals": "view_team_goals",
    "users": "view_all_users",
    "departments": "view_all_users",
    "salaries": "view_salary_info",
}
PRIVATE = {"memories", "memory_chunks", "conversations", "messages", "vaults", "receipts", "sessions"}


def test_readable_collections_are_shared_ones_at_their_read_tools_level():
    levels = {t["name"]: t["min_level"] for t in json.loads(TOOLS_FILE.read_text())["tools"]}
    # THEN every readable collection is exposed by a built-in read tool, at that tool's level
    assert set(CONFIG.readable) <= set(READ_TOOL)
    assert {c: CONFIG.readable[c] for c in CONFIG.readable} == {
        c: levels[READ_TOOL[c]] for c in CONFIG.readable
    }
    assert CONFIG.readable["salaries"] == 6
    # and nothing private to a person is readable
    assert not PRIVATE & set(CONFIG.readable)


@pytest.mark.parametrize("collection", ["memories", "conversations", "vaults", "nonsense", "../users"])
def test_given_an_unreadable_or_unknown_collection_then_the_spec_is_refused(collection):
    with pytest.raises(ValidationError) as refused:
        spec(reads=[collection])
    assert "may read" in str(refused.value)


def test_given_a_level_two_skill_reading_salaries_then_its_tool_is_level_six():
    # GIVEN a skill declared for level 2 that reads salaries
    s = spec(SALARIES, min_level=2, reads=["salaries"])
    # THEN its level, and the registry's tool for it, are the salary tool's level
    assert s.level == 6
    [tool] = skill_specs([ActiveSkill(s, 1)], CONFIG)
    assert tool.min_level == 6
    # and a skill reading tasks only keeps the higher of its own level and the tasks' level
    assert spec(reads=["tasks"], min_level=2).level == 3
    assert spec(reads=["tasks"], min_level=4).level == 4
    assert spec().level == 2
