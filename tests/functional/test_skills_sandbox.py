"""The sandbox (seed 001 §23.4, §25): untrusted skill code in a separate, limited process.

Every test runs a real child process. The refusals are checked where they happen: the static
check for what the code declares, the child's guarded import and audit hook for what it does at
run time (an import disguised as a string, a module the test config allows on purpose), the
parent for store writes and other organisations' paths, the rlimits and the wall clock for time
and memory."""

from __future__ import annotations

import os

import pytest

from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.features.skills.state import sandbox
from shared_lib.features.skills.state.sandbox import run_code, run_skill, static_problems
from tests.unit.skills.skill_fakes import CONFIG, EVASION, NETWORK, ORG, STORE_WRITE, config, spec


@pytest.fixture
def store() -> MemoryStore:
    s = MemoryStore()
    s.set(f"orgs/{ORG}/tasks/t1", {"title": "見積書"})
    s.set("orgs/other/tasks/t2", {"title": "よその会社"})
    return s


def run(code: str, store: MemoryStore, cfg=CONFIG, **kw):
    return run_code(code, kw.pop("input", {}), store, ORG, cfg, **kw)


def test_given_good_code_when_run_then_its_json_output_comes_back(store):
    r = run(
        "def run(input, view):\n    return {'n': input['n'] * 2, 'task': view.get('tasks', 't1')}\n",
        store,
        input={"n": 21},
        reads=("tasks",),
    )
    assert (r.ok, r.output, r.error_kind) == (True, {"n": 42, "task": {"title": "見積書"}}, None)


def test_given_a_query_when_run_then_the_org_scoped_view_answers(store):
    r = run(
        "def run(input, view):\n    return view.query('tasks', [['title', '==', '見積書']], 5)\n",
        store,
        reads=("tasks",),
    )
    assert r.output == [{"id": "t1", "title": "見積書"}]


def test_given_a_direct_network_import_then_it_is_refused_before_running(store):
    r = run(NETWORK, store)
    assert (r.ok, r.error_kind) == (False, "import")
    assert "before running" in r.error


def test_given_an_import_disguised_as_a_string_then_the_runtime_refuses_it(store):
    # GIVEN code the static check cannot see through
    assert static_problems(EVASION, CONFIG.import_allowlist) == []
    # WHEN it runs THEN the child refuses the import at run time
    r = run(EVASION, store)
    assert (r.ok, r.error_kind) == (False, "import")
    assert "socket" in r.error


def test_given_a_refusal_the_skill_catches_then_the_run_still_fails(store):
    code = "def run(input, view):\n    try:\n        __import__('so' + 'cket')\n    except Exception:\n        pass\n    return 1\n"
    assert run(code, store).error_kind == "import"


@pytest.mark.parametrize(
    ("module", "call", "kind"),
    [
        ("socket", "socket.create_connection(('127.0.0.1', 9))", "network"),
        ("socket", "socket.getaddrinfo('127.0.0.1', 80)", "network"),
        ("os", "os.system('true')", "process"),
        ("subprocess", "subprocess.run(['true'])", "process"),
        ("io", "io.open('out.txt', 'w').write('x')", "filesystem"),
        ("io", "io.open('/etc/hostname').read()", "filesystem"),
        ("os", "os.remove('/tmp/anything')", "filesystem"),
        ("ctypes", "ctypes.CDLL(None)", "process"),
    ],
)
def test_given_a_module_allowed_on_purpose_then_the_audit_hook_refuses_the_call(store, module, call, kind):
    # GIVEN a config that lets the module be imported (the import check is not what stops it)
    code = f"import {module}\ndef run(input, view):\n    {call}\n    return 1\n"
    # WHEN it runs THEN the child's audit hook refuses the call with its kind
    r = run(code, store, config(module))
    assert (r.ok, r.error_kind) == (False, kind), r.error


def test_given_a_store_write_then_the_parent_refuses_it_and_the_run_fails(store):
    r = run(STORE_WRITE, store)
    assert (r.ok, r.error_kind) == (False, "store_write")
    assert store.get(f"orgs/{ORG}/tasks/t9") is None


def test_given_another_organisations_path_then_it_is_refused(store):
    r = run("def run(input, view):\n    return view.get('../../other/tasks', 't2')\n", store)
    assert r.ok is False and r.output is None
    assert "outside" in r.error or "not a collection" in r.error


def test_given_a_busy_loop_then_the_wall_clock_kills_it(store):
    r = run("def run(input, view):\n    while True:\n        pass\n", store, timeout=1)
    assert (r.ok, r.error_kind) == (False, "timeout")


def test_given_a_big_allocation_then_the_memory_limit_stops_it(store):
    r = run("def run(input, view):\n    block = bytearray(2 * 1024 ** 3)\n    return len(block)\n", store)
    assert (r.ok, r.error_kind) == (False, "memory")


def test_given_the_parent_has_secrets_in_its_environment_then_the_child_sees_none(store, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-secret")
    monkeypatch.setenv("FIRESTORE_EMULATOR_HOST", "localhost:8080")
    assert "ANTHROPIC_API_KEY" in os.environ
    r = run("import os\ndef run(input, view):\n    return sorted(os.environ)\n", store, config("os"))
    assert r.ok, r.error
    assert not {"ANTHROPIC_API_KEY", "FIRESTORE_EMULATOR_HOST", "PATH", "HOME"} & set(r.output)


def test_given_an_output_over_the_limit_or_not_json_then_it_is_bad_output(store):
    assert run("def run(input, view):\n    return 'x' * 70000\n", store).error_kind == "bad_output"
    assert run("def run(input, view):\n    return {1, 2}\n", store).error_kind == "bad_output"


def test_given_dunder_access_or_no_run_then_it_is_refused_before_running(store):
    assert "dunder" in run("def run(input, view):\n    return ().__class__\n", store).error
    assert "run(input, view)" in run("x = 1\n", store).error


def test_given_a_prompt_skill_then_its_template_is_rendered_without_a_process(store):
    s = spec(
        kind="prompt",
        implementation="$a と $b の合計を考えるウル",
        examples=[{"input": {"a": 1, "b": 2}, "output": "1 と 2 の合計を考えるウル"}],
    )
    r = run_skill(s, {"a": 1, "b": 2}, store, ORG, CONFIG)
    assert (r.ok, r.output) == (True, "1 と 2 の合計を考えるウル")


def test_given_a_query_with_an_unknown_operator_then_it_is_refused_not_widened(store):
    r = run(
        "def run(input, view):\n    return view.query('tasks', [['title', 'like', '%']], 5)\n",
        store,
        reads=("tasks",),
    )
    assert (r.ok, r.error_kind) == (False, "exception")
    assert "operators" in r.error


def test_given_a_collection_the_skill_did_not_declare_then_the_run_fails_as_store_read(store):
    # GIVEN salaries in the organisation and a skill that declared it reads tasks only
    store.set(f"orgs/{ORG}/salaries/u1", {"amount": 900000})
    code = "def run(input, view):\n    return view.get('salaries', 'u1')\n"
    # WHEN it reads salaries THEN the parent serves nothing and the run fails as a refused read
    r = run(code, store, reads=("tasks",))
    assert (r.ok, r.output, r.error_kind) == (False, None, "store_read")
    assert "salaries" in r.error
    # even when the skill catches the error and returns something else
    caught = "def run(input, view):\n    try:\n        view.query('memories')\n    except PermissionError:\n        return 1\n"
    assert run(caught, store, reads=("tasks",)).error_kind == "store_read"
    # and declared, the same read is served
    assert run(code, store, reads=("salaries",)).output == {"amount": 900000}


def test_the_child_sets_its_own_limits_and_the_parent_runs_no_code_between_fork_and_exec(store, monkeypatch):
    # GIVEN a watch on how the sandbox starts its child
    started: list[dict] = []
    real = sandbox.subprocess.Popen

    def popen(command, **kwargs):
        if str(sandbox.SUPERVISOR) in command:
            started.append(kwargs)
        return real(command, **kwargs)

    monkeypatch.setattr(sandbox.subprocess, "Popen", popen)
    # WHEN a skill (allowed ``resource`` on purpose) reads its own limits
    code = (
        "import resource\n"
        "def run(input, view):\n"
        "    return [resource.getrlimit(r)[1] for r in "
        "(resource.RLIMIT_AS, resource.RLIMIT_NOFILE, resource.RLIMIT_FSIZE, resource.RLIMIT_CORE, "
        "resource.RLIMIT_NPROC)]\n"
    )
    r = run(code, store, config("resource"))
    # THEN the child set them itself (no preexec_fn), in its own process group; files no bigger
    # than its tmpfs, no core, processes of its user bounded
    assert r.ok, r.error
    mib = 1024 * 1024
    assert r.output == [
        CONFIG.memory_mb * mib,
        CONFIG.max_open_files,
        CONFIG.tmpfs_mb * mib,
        0,
        CONFIG.max_processes,
    ]
    assert [("preexec_fn" in kw, kw.get("start_new_session")) for kw in started] == [(False, True)]
