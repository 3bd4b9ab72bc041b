"""The local stack: real emulators, every function on its own localhost port, fakes.

``up()`` starts the Pub/Sub and Firestore emulators, the fake Anthropic server, the fake
channel APIs and one functions-framework process per target of ``topology.json``;
creates every topic and push subscription (ordering, dead-letter policy, retry policy);
seeds the flags and the demo directory; waits until everything is healthy. Each process
is started in its own session and recorded (pid, port, command) in
``.charter/local/state.json`` as soon as it starts, so ``down()`` stops exactly what was
started, by pid, even after a failed start.

A function's recorded pid is functions-framework's gunicorn arbiter; the layer's code runs
in its worker (``status()`` lists them: ``workers``). ``restart(name)`` replaces one
component the way ``up()`` started it: the same command, port and environment (kept in
``function.env.json``, readable by the owner only), a new process group.

Dead letters: the emulator is given only what it handles. A dead-letter policy on an
ordered subscription wedges it (after the last attempt of such a message it stops
delivering to every subscription, a NullPointerException in its log), so ordered
subscriptions get none here; the functions dead-letter those messages themselves
(``CHARTER_DEADLETTER_FALLBACK``, ``shared_lib.wiring.push``).

The smoke twins of the topics always exist (a smoke turn must be publishable). With
``candidates`` (``charter local up --candidates``, or ``infra.local_candidates.start`` on a
running stack) a second, "candidate" process of each target runs with
``CHARTER_REVISION=candidate`` and the smoke twins' subscriptions push to it, as they push to
the candidate revisions' tag URLs in the cloud.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infra.emulators import (
    Emulators,
    child_pids,
    free_port,
    kill_group,
    pid_alive,
    stop_pid,
    stop_pids,
    wait_port,
)
from shared_lib.errors import CharterError
from shared_lib.settings import Settings

REPO = Path(__file__).resolve().parent.parent
# Where `charter local up` keeps its state, logs and the operator commands' settings: the
# settings' CHARTER_HOME (``.charter`` of the folder it runs in) unless CHARTER_LOCAL_DIR says.
STATE_DIR = Path(os.environ.get("CHARTER_LOCAL_DIR") or Settings.from_env().home / "local").resolve()
PROJECT = "charter-local"
EMULATORS = ("pubsub", "firestore")
EMULATOR_NOTES = [
    "The Pub/Sub emulator cannot dead-letter subscriptions with message ordering (every chain subscription; "
    "a policy there wedges it), so they get none: the functions count failed deliveries and dead-letter a "
    "message themselves after max_delivery_attempts of topology.json (CHARTER_DEADLETTER_FALLBACK=1). "
    "In the cloud Pub/Sub's own policy applies.",
    "Push subscriptions here carry no OIDC token (the cloud's do), and the Firestore emulator applies no TTL "
    "policy: expired claims and receipts stay until the emulator stops.",
]


class StackError(CharterError, RuntimeError):
    """A component did not come up: its name, why, and the log that says more."""


Progress = Callable[[str], None]


def _silent(_line: str) -> None:
    pass


@dataclass
class StackPaths:
    root: Path

    @property
    def state(self) -> Path:
        return self.root / "state.json"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def function_env(self) -> Path:
        """The functions' environment, so ``restart`` starts one exactly as ``up`` did."""
        return self.root / "function.env.json"

    @property
    def settings(self) -> Path:
        """The operator commands' settings while the stack runs (``composition.operator_runtime``)."""
        return self.root / "charter.env"


def _paths(root: Path | None = None) -> StackPaths:
    return StackPaths(root or STATE_DIR)


def load_state(root: Path | None = None) -> dict[str, Any]:
    p = _paths(root).state
    return json.loads(p.read_text()) if p.exists() else {}


def _save(paths: StackPaths, state: dict[str, Any]) -> None:
    paths.root.mkdir(parents=True, exist_ok=True)
    tmp = paths.state.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=2))
    tmp.replace(paths.state)


def _spawn(
    paths: StackPaths,
    state: dict[str, Any],
    name: str,
    cmd: list[str],
    env: dict[str, str],
    port: int,
    url: str,
) -> None:
    paths.logs.mkdir(parents=True, exist_ok=True)
    log_path = paths.logs / f"{name}.log"
    with open(log_path, "ab") as log:
        try:
            proc = subprocess.Popen(
                cmd,
                cwd=REPO,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        except FileNotFoundError as exc:
            raise StackError(f"{name}: {cmd[0]} is not installed (not on PATH)") from exc
    state["components"][name] = {"pid": proc.pid, "port": port, "url": url, "cmd": cmd, "log": str(log_path)}
    _save(paths, state)


def _targets() -> dict[str, str]:
    from shared_lib.delivery.topology import TOPOLOGY

    targets: dict[str, str] = {name: t.kind for name, t in TOPOLOGY.targets.items()}
    if not (REPO / "functions" / "admin.py").exists():
        targets.pop("admin", None)
    return targets


def function_env(state: dict[str, Any], extra: dict[str, str] | None = None) -> dict[str, str]:
    c = state["components"]
    fc = c["fake_channels"]["url"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CHARTER_"))}
    env.update(
        {
            "PYTHONPATH": str(REPO),
            "PYTHONUNBUFFERED": "1",
            "PUBSUB_EMULATOR_HOST": f"127.0.0.1:{c['pubsub']['port']}",
            "FIRESTORE_EMULATOR_HOST": f"127.0.0.1:{c['firestore']['port']}",
            "CHARTER_PROJECT": state["project"],
            "GOOGLE_CLOUD_PROJECT": state["project"],
            "CHARTER_ENV": "local",
            "CHARTER_STORE": "firestore",
            "CHARTER_BUS": "pubsub",
            "ANTHROPIC_BASE_URL": c["fake_llm"]["url"],
            "ANTHROPIC_API_KEY": "local-fake-key",
            "CHATWORK_API_BASE": f"{fc}/chatwork/v2",
            "LINE_API_BASE": f"{fc}/line",
            "SLACK_API_BASE": f"{fc}/slack/api",
            "CHARTER_HTTP_REPLY_URL": f"{fc}/http/reply",
            "CHATWORK_API_TOKEN": "local-chatwork-token",
            "LINE_CHANNEL_ACCESS_TOKEN": "local-line-token",
            "SLACK_BOT_TOKEN": "xoxb-local-fake",
            "CHARTER_LOG_JSON": "1",
            # every process's spans go to the emulator's trace_spans (charter turns show prints them)
            "CHARTER_TRACE_EXPORTER": "store",
            "CHARTER_FLAGS_TTL": str(state.get("flags_ttl", 2)),
            "CHARTER_DEFAULT_ORG": "demo",
            # deliveries of every provider land in the demo organisation; the bot identities are the
            # ones infra/webhook_sender addresses
            "CHARTER_INGRESS_CONFIG": json.dumps(
                {
                    "default_org": "demo",
                    "bots": {
                        "chatwork_account_id": "9000001",
                        "slack_user_id": "UCHARTERBOT",
                        "line_user_id": "Ucharterbot000000000000000000000",
                    },
                }
            ),
            "CHARTER_LLM_TIMEOUT": "20",
            # the emulator does not dead-letter ordered subscriptions: the handler does (shared_lib.wiring.push)
            "CHARTER_DEADLETTER_FALLBACK": "1",
        }
    )
    for var in (
        "CHATWORK_WEBHOOK_TOKEN",
        "LINE_CHANNEL_SECRET",
        "SLACK_SIGNING_SECRET",
        "HTTP_WEBHOOK_SECRET",
        "CHARTER_INGRESS_CONFIG",
        "CHARTER_ADMIN_TOKEN",
    ):
        if os.environ.get(var):
            env[var] = os.environ[var]
    if state.get("fault_injection"):
        env["CHARTER_FAULT_INJECTION"] = "1"
    if "fake_llm_fallback" in c:  # three LLM peers, the fake Anthropic API first (shared_lib.peers)
        env["CHARTER_PEERS"] = local_peers(c["fake_llm_fallback"]["url"], c["fake_openai"]["url"])
        env["CHARTER_PEER_HEALTH_SECONDS"] = "2"  # recovery seen within seconds (e2e)
    if "fake_chatwork" in c:  # tasks live in (fake) ChatWork: the executor's effects are external
        env["CHARTER_TASK_BACKEND"] = "chatwork"
        env["CHATWORK_TASKS_API_BASE"] = f"{c['fake_chatwork']['url']}/v2"
    env.update(state.get("extra_env") or {})
    env.update(extra or {})
    return env


FAKE_CONTEXT_WINDOW = 32_768
OPERATOR_LLM_ENV = ("CHARTER_PEERS", "CHARTER_PEER_HEALTH_SECONDS", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY")


def local_peers(vertex_url: str, openai_url: str) -> str:
    """``CHARTER_PEERS`` of the local stack, for every purpose in this order: ``anthropic`` on
    ``ANTHROPIC_BASE_URL`` (the first fake), ``vertex`` (Claude on Vertex AI: the second fake's
    Vertex routes, the fake key as its access token), then ``local``, an OpenAI-compatible server
    on the company's own machines (the fake OpenAI server)."""
    key = {"api_key_setting": "anthropic_api_key"}
    # the fakes' context window: a small local model's (32 768 tokens), so compaction's levels
    # (seed 001 §19, measured against the serving model's window) are reached by a real conversation
    window = {"max_context_tokens": FAKE_CONTEXT_WINDOW}
    peers = [
        {"name": "anthropic", "kind": "anthropic", "base_url_setting": "anthropic_base_url", **key, **window},
        {
            "name": "vertex",
            "kind": "vertex",
            "region": "us-east5",
            "base_url": f"{vertex_url}/v1",
            **key,
            **window,
        },
        {
            "name": "local",
            "kind": "openai_compatible",
            "local": True,
            "base_url": f"{openai_url}/v1",
            **window,
        },
    ]
    return json.dumps({"description": "the local stack (infra.local_stack)", "peers": peers, "routing": {}})


def up(
    *,
    root: Path | None = None,
    fault_injection: bool = False,
    flags_ttl: float = 2.0,
    timeout: float = 120.0,
    candidates: bool = False,
    chatwork_tasks: bool = False,
    extra_env: dict[str, str] | None = None,
    progress: Progress = _silent,
    emulators: Emulators | None = None,
    project: str = PROJECT,
) -> dict[str, Any]:
    """Start everything; returns the state. Raises (after stopping what started) on failure:
    ``StackError`` names the component and its log.

    ``candidates`` also starts a candidate process per target (smoke turns reach only those);
    ``chatwork_tasks`` also starts the fake ChatWork task API and keeps tasks there
    (``CHARTER_TASK_BACKEND=chatwork``); ``extra_env`` goes to every function. ``progress``
    receives one line per step and per component up, with the seconds since the start.

    ``emulators`` (a test session's) are used instead of starting a Pub/Sub and a Firestore
    emulator: recorded as ``shared``, they are neither restarted nor stopped by this stack, whose
    topics, subscriptions and documents live in ``project`` (a project of its own per stack).
    """
    paths = _paths(root)
    if load_state(root).get("components"):
        raise StackError(
            f"a local stack is already recorded in {paths.state}: run `charter local down` first"
        )
    state: dict[str, Any] = {
        "project": project,
        "components": {},
        "fault_injection": fault_injection,
        "flags_ttl": flags_ttl,
        "started_at": time.time(),
        "chatwork_tasks": chatwork_tasks,
        "extra_env": dict(extra_env or {}),
    }
    if emulators is not None:
        for name, port in (("pubsub", emulators.pubsub_port), ("firestore", emulators.firestore_port)):
            state["components"][name] = _shared(emulators, name, port)
    _save(paths, state)
    started = time.monotonic()

    def say(line: str) -> None:
        progress(f"[{time.monotonic() - started:5.1f} s] {line}")

    try:
        _start_all(paths, state, timeout, say)
        if candidates:
            from infra import local_candidates

            say("starting the candidate processes")
            state = local_candidates.start(root=root, timeout=timeout)
        say("ready")
    except BaseException:
        down(root=root)
        raise
    return state


def _start_all(paths: StackPaths, state: dict[str, Any], timeout: float, say: Progress = _silent) -> None:
    ps, fs, llm, fc, fallback, oai = (free_port() for _ in range(6))
    say(f"starting the emulators and fakes (logs in {paths.logs})")
    base_env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1")
    if "pubsub" not in state["components"]:  # not a test session's shared emulators (``up``)
        _start_emulators(paths, state, base_env, ps, fs)
    _spawn(
        paths,
        state,
        "fake_llm",
        [sys.executable, "-m", "infra.fake_llm", "--port", str(llm)],
        base_env,
        llm,
        f"http://127.0.0.1:{llm}",
    )
    # the LLM peers the functions fall back to when the first is down (CHARTER_PEERS): the second
    # fake Anthropic server answers as Claude on Vertex AI, the fake OpenAI server as a local model
    _spawn(
        paths,
        state,
        "fake_openai",
        [sys.executable, "-m", "infra.fake_openai", "--port", str(oai)],
        base_env,
        oai,
        f"http://127.0.0.1:{oai}",
    )
    _spawn(
        paths,
        state,
        "fake_llm_fallback",
        [sys.executable, "-m", "infra.fake_llm", "--port", str(fallback)],
        base_env,
        fallback,
        f"http://127.0.0.1:{fallback}",
    )
    _spawn(
        paths,
        state,
        "fake_channels",
        [sys.executable, "-m", "infra.fake_channels", "--port", str(fc)],
        base_env,
        fc,
        f"http://127.0.0.1:{fc}",
    )
    fakes = ["pubsub", "firestore", "fake_llm", "fake_llm_fallback", "fake_openai", "fake_channels"]
    if state.get("chatwork_tasks"):
        cw = free_port()
        _spawn(
            paths,
            state,
            "fake_chatwork",
            [
                sys.executable,
                "-m",
                "infra.fake_chatwork",
                "--port",
                str(cw),
                "--token",
                "local-chatwork-token",
            ],
            base_env,
            cw,
            f"http://127.0.0.1:{cw}",
        )
        fakes.append("fake_chatwork")
    for name in fakes:
        _wait(state, name, timeout)
        say(f"{name} up on port {state['components'][name]['port']}")
    env = function_env(state, {"CHARTER_REVISION": "stable"})
    paths.function_env.touch(mode=0o600)
    paths.function_env.write_text(json.dumps(env))
    say(f"starting {len(_targets())} functions")
    for target, kind in _targets().items():
        spawn_function(paths, state, target, target, kind, env)
    os.environ.update(
        {
            "PUBSUB_EMULATOR_HOST": env["PUBSUB_EMULATOR_HOST"],
            "FIRESTORE_EMULATOR_HOST": env["FIRESTORE_EMULATOR_HOST"],
        }
    )
    say("seeding the flags and the demo directory")
    _seed(state)
    for target in _targets():
        _wait(state, target, timeout)
        say(f"{target} up on port {state['components'][target]['port']}")
    for name in ("ingress", "admin"):  # the first request builds the process's runtime: do it now
        if name in state["components"] and not _until_healthy(state["components"][name], name, timeout):
            raise StackError(f"{name} is not healthy (see {paths.logs / (name + '.log')})")
        if name in state["components"]:
            say(f"{name} healthy")
    say("creating the topics and push subscriptions")
    _create_topology(state)
    state["ingress_url"] = state["components"]["ingress"]["url"]
    if "admin" in state["components"]:
        state["admin_url"] = state["components"]["admin"]["url"]
    state["notes"] = EMULATOR_NOTES
    state["ready"] = True
    _save(paths, state)
    from shared_lib.wiring.composition import write_env_file

    write_env_file(
        paths.settings,
        {
            "CHARTER_ENV": "local",
            "CHARTER_PROJECT": state["project"],
            "CHARTER_STORE": "firestore",
            "FIRESTORE_EMULATOR_HOST": env["FIRESTORE_EMULATOR_HOST"],
            "PUBSUB_EMULATOR_HOST": env["PUBSUB_EMULATOR_HOST"],
            # the peers the functions run with, so `charter peers list [--probe]` sees the same ones
            **{k: env[k] for k in OPERATOR_LLM_ENV if k in env},
        },
    )


def _start_emulators(paths: StackPaths, state: dict[str, Any], env: dict[str, str], ps: int, fs: int) -> None:
    """The stack's own Pub/Sub and Firestore emulators (gcloud SDK), each in its process group."""
    pubsub = ["gcloud", "beta", "emulators", "pubsub", "start", f"--host-port=127.0.0.1:{ps}"]
    _spawn(
        paths,
        state,
        "pubsub",
        [*pubsub, f"--project={state['project']}", "--quiet"],
        env,
        ps,
        f"127.0.0.1:{ps}",
    )
    firestore = ["gcloud", "emulators", "firestore", "start", f"--host-port=127.0.0.1:{fs}", "--quiet"]
    _spawn(paths, state, "firestore", firestore, env, fs, f"127.0.0.1:{fs}")


def _shared(emulators: Emulators, name: str, port: int) -> dict[str, Any]:
    """A component of a test session's emulators: no command to restart it, and ``down`` leaves it."""
    return {"pid": emulators.pids[name], "port": port, "url": f"127.0.0.1:{port}", "shared": True}


def spawn_function(
    paths: StackPaths, state: dict[str, Any], name: str, target: str, kind: str, env: dict[str, str]
) -> None:
    """One functions-framework process of ``target`` on a free port, recorded as component ``name``."""
    port = free_port()
    env = {**env, "FUNCTION_TARGET": target}  # as Cloud Run sets it: the service's name in its spans
    _spawn(paths, state, name, _function_cmd(target, kind, port), env, port, f"http://127.0.0.1:{port}")


def _function_cmd(target: str, kind: str, port: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "functions_framework",
        "--source",
        str(REPO / "functions" / "main.py"),
        "--target",
        target,
        "--signature-type",
        kind,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]


def _wait(state: dict[str, Any], name: str, timeout: float) -> None:
    """Until ``name`` listens on its port; ``StackError`` (with its log) when it exits or times out."""
    comp = state["components"][name]
    log = comp.get("log") or f".charter/local/logs/{name}.log"
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if not pid_alive(comp["pid"]):
            raise StackError(f"{name} exited while starting (port {comp['port']} taken?): see {log}")
        if wait_port(comp["port"], 0.5):
            if pid_alive(comp["pid"]):
                return
            raise StackError(f"{name} exited while starting (port {comp['port']} taken?): see {log}")
    raise StackError(f"{name} did not start on port {comp['port']} within {timeout:.0f} s: see {log}")


LOCAL_OPERATOR = "u-kazu"  # level 6 in the demo directory (shared_lib.demo_data)


def _seed(state: dict[str, Any]) -> None:
    from shared_lib.adapters.firestore_store import FirestoreStore
    from shared_lib.demo_data import DEMO_ORG, DEPARTMENT_NAMES, DEPARTMENT_READINGS, DEPARTMENTS, PEOPLE
    from shared_lib.features.finetune.state.config import set_opt_in
    from shared_lib.flags import FLAGS_DOC, flags_store_doc, load_flags_file
    from shared_lib.tools.directory import seed_directory

    store = FirestoreStore(project=state["project"])
    store.set(FLAGS_DOC, flags_store_doc(load_flags_file()))
    people = PEOPLE
    if state.get("chatwork_tasks"):  # ChatWork assigns tasks to account ids (integers)
        people = [{**person, "chatwork_account_id": str(3_000_001 + i)} for i, person in enumerate(PEOPLE)]
    seed_directory(store, DEMO_ORG, people, DEPARTMENTS, DEPARTMENT_NAMES, DEPARTMENT_READINGS)
    set_opt_in(store, DEMO_ORG, True)  # like `charter demo`: the demo organisation's turns are staged
    # the dashboard's operator: the demo's CEO, with the deployment-wide controls (a laptop is
    # every operator at once); printed by `charter local up`, as `charter operators add` prints one
    from shared_lib.admin.identity import new_credential
    from shared_lib.ids import utc_now

    state["operator"] = {"org": DEMO_ORG, "person": LOCAL_OPERATOR}
    state["operator_token"] = new_credential(
        store, DEMO_ORG, LOCAL_OPERATOR, by="charter local up", now=utc_now(), platform=True
    )


def _create_topology(state: dict[str, Any]) -> None:
    from google.cloud import pubsub_v1  # type: ignore[attr-defined]

    from shared_lib.delivery.topology import TOPOLOGY

    project = state["project"]
    from google.api_core.exceptions import AlreadyExists

    pub, sub = pubsub_v1.PublisherClient(), pubsub_v1.SubscriberClient()
    for topic in TOPOLOGY.topic_ids.values():  # the smoke twins too: a smoke turn must be publishable
        with contextlib.suppress(AlreadyExists):  # a retry after a partial creation (restart)
            pub.create_topic(name=pub.topic_path(project, topic))
    for name, s in TOPOLOGY.subscriptions.items():
        endpoint = state["components"].get(s.target, {}).get("url")
        if endpoint is not None:
            with contextlib.suppress(AlreadyExists):
                sub.create_subscription(request=subscription_request(project, name, s, endpoint))


def subscription_request(project: str, name: str, s: Any, endpoint: str) -> dict[str, Any]:
    """The emulator's create-subscription request of topology subscription ``s`` pushing to ``endpoint``."""
    from shared_lib.delivery.topology import TOPOLOGY

    retry = TOPOLOGY.retry
    request: dict[str, Any] = {
        "name": f"projects/{project}/subscriptions/{name}",
        "topic": f"projects/{project}/topics/{TOPOLOGY.topic(s.topic)}",
        "push_config": {"push_endpoint": f"{endpoint}/"},
        "enable_message_ordering": s.ordered,
        "ack_deadline_seconds": retry.ack_deadline_seconds,
        "retry_policy": {"minimum_backoff": {"seconds": 1}, "maximum_backoff": {"seconds": 2}},
    }
    if s.filter:  # the emulator accepts it and ignores it: the target declines such a message itself
        request["filter"] = s.filter
    if s.dead_letter and not s.ordered:  # ordered ones: the functions' fallback (module docstring)
        request["dead_letter_policy"] = {
            "dead_letter_topic": f"projects/{project}/topics/{TOPOLOGY.topic('deadletter')}",
            "max_delivery_attempts": retry.max_delivery_attempts,
        }
    return request


def _healthy(comp: dict[str, Any], name: str) -> bool:
    if not pid_alive(comp["pid"]):
        return False
    if name in (
        "ingress",
        "admin",
        "fake_llm",
        "fake_llm_fallback",
        "fake_openai",
        "fake_channels",
        "fake_chatwork",
    ):
        path = {
            "ingress": "/healthz",
            "admin": "/healthz",
            "fake_llm": "/_admin/health",
            "fake_llm_fallback": "/_admin/health",
            "fake_openai": "/_admin/health",
            "fake_channels": "/_admin/health",
            "fake_chatwork": "/_admin/health",
        }[name]
        try:
            with urllib.request.urlopen(comp["url"] + path, timeout=10) as resp:
                return bool(resp.status == 200)
        except OSError:
            return False
    return wait_port(comp["port"], 1.0)


def _until_healthy(comp: dict[str, Any], name: str, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if _healthy(comp, name):
            return True
        time.sleep(0.3)
    return False


def status(root: Path | None = None) -> dict[str, Any]:
    state = load_state(root)
    comps = {
        name: {
            **{k: v for k, v in c.items() if k != "cmd"},
            "healthy": _healthy(c, name),
            "workers": workers(c),
        }
        for name, c in state.get("components", {}).items()
    }
    return {
        "running": bool(comps) and all(c["healthy"] for c in comps.values()),
        "project": state.get("project"),
        "ingress_url": state.get("ingress_url"),
        "admin_url": state.get("admin_url"),
        "components": comps,
        "notes": state.get("notes", []),
    }


def workers(comp: dict[str, Any]) -> list[int]:
    """The pids doing a component's work: a function's gunicorn workers (children of the
    recorded arbiter), an emulator's JVM under gcloud; the recorded pid when it has none."""
    pid = int(comp["pid"])
    if not pid_alive(pid):
        return []
    return child_pids(pid) or [pid]


def restart(
    name: str, *, root: Path | None = None, hard: bool = False, timeout: float = 90.0
) -> dict[str, Any]:
    """Replace one component as ``up`` started it: same command, port and environment, new pid.

    ``hard`` SIGKILLs the old process group at once (a crash); otherwise it is stopped as
    ``down`` stops it. Returns the component's new record once it is healthy again.
    """
    paths = _paths(root)
    state = load_state(root)
    comp = state.get("components", {}).get(name)
    if comp is None:
        raise KeyError(f"no component {name!r} in {paths.state}")
    if comp.get("shared"):
        raise ValueError(
            f"{name} is shared with other stacks of the test session: it is not this stack's to restart"
        )
    if name == "firestore":
        raise ValueError("firestore keeps the stack's documents: restart the stack instead")
    if "cmd" not in comp:
        raise ValueError(f"{name} was started by an older `charter local up`: restart the stack")
    if hard:
        kill_group(int(comp["pid"]))
    else:
        stop_pid(int(comp["pid"]))
    if name == "pubsub":
        return _restart_pubsub(paths, state, comp, timeout)
    if name in _targets():
        env = json.loads(paths.function_env.read_text())
    else:
        env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1")
    _spawn(paths, state, name, list(comp["cmd"]), env, int(comp["port"]), str(comp["url"]))
    fresh = state["components"][name]
    if not wait_port(fresh["port"], timeout) or not _until_healthy(fresh, name, timeout):
        raise RuntimeError(
            f"{name} did not come back on port {fresh['port']} (see {paths.logs / (name + '.log')})"
        )
    return dict(fresh)


def _restart_pubsub(
    paths: StackPaths, state: dict[str, Any], comp: dict[str, Any], timeout: float
) -> dict[str, Any]:
    """The Pub/Sub emulator again on its port, with the topics and push subscriptions ``up``
    made (and the candidates' smoke subscriptions). The emulator keeps nothing: a message it
    held is gone, but every webhook it did not take was answered 503 and is sent again by its
    channel (``layers.ingress``), and a layer's publish that failed is redelivered to that layer."""
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1")
    _spawn(paths, state, "pubsub", list(comp["cmd"]), env, int(comp["port"]), str(comp["url"]))
    fresh = state["components"]["pubsub"]
    if not wait_port(fresh["port"], timeout) or not _until_healthy(fresh, "pubsub", timeout):
        raise RuntimeError(
            f"pubsub did not come back on port {fresh['port']} (see {paths.logs / 'pubsub.log'})"
        )
    os.environ["PUBSUB_EMULATOR_HOST"] = f"127.0.0.1:{fresh['port']}"
    end = time.monotonic() + timeout
    while True:  # the port listens a little before the emulator serves
        try:
            _create_topology(state)
            break
        except Exception as exc:
            if time.monotonic() > end:
                raise RuntimeError(f"pubsub: the topics could not be created again: {exc}") from exc
            time.sleep(0.5)
    if state.get("smoke_subscriptions"):
        from infra import local_candidates

        state["smoke_subscriptions"] = []
        local_candidates._create_smoke_subscriptions(state)
    _save(paths, state)
    return dict(fresh)


def down(root: Path | None = None) -> list[str]:
    """Stop every recorded process by pid (functions first, emulators last); emulators shared with
    other stacks (``up(emulators=...)``) are left to whoever started them."""
    paths = _paths(root)
    state = load_state(root)
    own = {
        n: int(c["pid"])
        for n, c in reversed(list(state.get("components", {}).items()))
        if not c.get("shared")
    }
    # the functions and fakes together, then the emulators they talk to
    stop_pids([pid for name, pid in own.items() if name not in EMULATORS])
    stop_pids([pid for name, pid in own.items() if name in EMULATORS])
    stopped = list(own)
    for path in (paths.state, paths.settings, paths.function_env):
        path.unlink(missing_ok=True)
    return stopped
