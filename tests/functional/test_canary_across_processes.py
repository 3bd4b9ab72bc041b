"""The sticky canary across processes: a fresh interpreter with another hash seed computes the
same buckets and arms (a redeploy, another instance). The properties of one process are
``tests/unit/rollout/test_flags_sticky_canary.py``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from shared_lib.flags import bucket_fine, evaluate
from tests.unit.rollout.test_flags_sticky_canary import canary, ids, salts

ROOT = Path(__file__).resolve().parents[2]


_CHILD = """
import json, sys
from shared_lib.flags import FlagsDocument, evaluate, bucket_fine
people = json.load(sys.stdin)
print(json.dumps([[bucket_fine(s, o, u), evaluate(FlagsDocument(version="v", brain_mode="canary",
      canary_percent=p, bucket_salt=s), o, u).arm] for s, o, u, p in people]))
"""


@given(st.lists(st.tuples(salts, ids, ids, st.sampled_from([1, 10, 50, 90])), min_size=1, max_size=40))
@settings(max_examples=3, deadline=None, derandomize=True)
def test_given_people_when_another_process_computes_their_arm_then_it_is_the_same(people):
    # GIVEN people and their buckets and arms computed here
    here = [[bucket_fine(s, o, u), evaluate(canary(p, s), o, u).arm] for s, o, u, p in people]
    # WHEN a fresh interpreter with a different hash seed computes them (another process, a redeploy)
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", _CHILD],
        input=json.dumps(people),
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        check=True,
        timeout=60,
    )
    # THEN every person has the same bucket and arm
    assert json.loads(out.stdout) == here
