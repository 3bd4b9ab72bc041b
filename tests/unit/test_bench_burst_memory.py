"""The burst's memory figures (``infra.bench.burst``): per function, the VmRSS summed over its
process tree (the arbiter's pages counted again in each worker it forked) and what an instance
holds (the tree's proportional set size, a shared page counted once) with its worker's VmRSS."""

from __future__ import annotations

import subprocess
import sys

from infra.bench.burst import instance_memory, resident_memory


def test_an_instance_counts_its_shared_pages_once_and_names_its_workers_own_memory():
    # GIVEN a supervisor that forked a worker after importing a library (as gunicorn does)
    code = (
        "import os, sys, json, time\n"
        "import email.mime.multipart, json.decoder, decimal, xml.dom.minidom\n"
        "child = os.fork()\n"
        "if child == 0:\n"
        "    time.sleep(60); os._exit(0)\n"
        "print(child, flush=True); sys.stdin.readline(); os.kill(child, 9)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        worker = int(proc.stdout.readline())  # type: ignore[union-attr]
        state = {"components": {"guardian": {"pid": proc.pid}}}
        # WHEN the bench reads its memory
        summed = resident_memory(state)["guardian"]
        held = instance_memory(state)["guardian"]
        # THEN the instance's figure counts the pages the two share once (below the summed VmRSS;
        # a page shared with other processes of the machine is divided among them too), and the
        # worker's own VmRSS is the forked process's, not the tree's
        assert 0 < held["instance_pss"] < summed
        assert 0 < held["worker_rss"] < summed
        assert worker > 0
    finally:
        proc.stdin.write("\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]
        proc.wait(timeout=30)
