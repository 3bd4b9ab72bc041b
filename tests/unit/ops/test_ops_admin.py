"""The admin service: dashboard files, JSON API, operator identity, emergency controls, tasks."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from admin_fakes import SCHEDULER, FakeVerifier, as_, credential
from admin_fakes import client as admin_client
from ops_fakes import ORG, TASK_CREATE, USER, make_runtime, replies, send
from werkzeug.test import EnvironBuilder

from shared_lib.admin.app import STATIC_DIR, create_app, dispatch
from shared_lib.admin.charts import line_chart
from shared_lib.demo_data import CONVERSATION
from shared_lib.flags import OVERRIDE_DOC
from shared_lib.ops import queries

STOP = {"reason": "incident drill", "ttl_hours": 1}
ID_TOKEN = "eyJhbGciOiJSUzI1NiJ9.eyJlbWFpbCI6Im9wcyJ9.c2ln"  # a JWT's shape; the fake verifies it


def client(rt, *, local: bool = True, verifier: FakeVerifier | None = None):
    return admin_client(rt, local=local, verifier=verifier)


def auth(rt, person: str = "u-kazu", *, platform: bool = True) -> dict[str, str]:
    """A platform operator credential of the demo's CEO (the stack's own, as `charter local up`)."""
    return as_(rt, person, ORG, platform=platform)


# --------------------------------------------------------------------------- page and files


def test_the_dashboard_page_and_its_files_are_served_from_the_package():
    c = client(make_runtime())
    page = c.get("/")
    assert page.status_code == 200 and b'id="turns-table"' in page.data
    assert "script-src 'self'" in page.headers["Content-Security-Policy"]
    for name in ("app.js", "app.css"):
        assert c.get(f"/assets/{name}").status_code == 200


def test_nothing_is_loaded_from_another_host():
    for path in Path(STATIC_DIR).iterdir():
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"(src|href)\s*=\s*[\"']?(https?:)?//", text), path.name
        assert "cdn" not in text.lower(), path.name


def test_a_turn_link_opens_the_dashboard_on_that_turn():
    r = client(make_runtime()).get("/admin/orgs/acme/turns/T1")
    assert r.status_code == 302 and r.headers["Location"].endswith("/?org=acme&turn=T1")


def test_dispatch_runs_another_apps_request_through_the_admin_app():
    # GIVEN the request functions-framework hands to the admin function
    request = EnvironBuilder(path="/healthz", method="GET").get_request()
    # WHEN it is dispatched THEN the admin app answers it
    response = dispatch(create_app(make_runtime()), request)
    assert response.status_code == 200 and response.get_json()["ok"] is True


# --------------------------------------------------------------------------- read API


def test_todays_panel_has_the_seed_statistics(rt, demo_turns):
    s = client(rt).get("/api/stats").get_json()
    # the demo is one room where two people talk: two conversations, a turn each message
    assert s["conversations"] == len({speaker for speaker, _ in CONVERSATION}) == 2
    assert s["turns"] == len(demo_turns)
    assert s["avg_response_ms"] > 0 and 0 < s["mean_confidence"] <= 1
    assert s["confirmations"] >= 1 and 0 <= s["confirmation_rate"] <= 1 and s["blocks"] >= 0
    cost = s["cost"]
    assert cost["cost_today_usd"] > 0 and cost["cost_month_usd"] >= cost["cost_today_usd"]
    assert cost["projected_month_usd"] >= cost["cost_month_usd"]


def test_metrics_come_with_an_svg_chart_each(rt, demo_turns):
    m = client(rt).get("/api/metrics?hours=6&step=60").get_json()
    assert len(m["series"]) == 6 and sum(w["turns"] for w in m["series"]) == len(demo_turns)
    assert set(m["charts"]) == {
        "llm_latency",
        "tool_error_rate",
        "confirmation_rate",
        "block_rate",
        "cost",
        "turns",
        "tokens",
    }
    assert all(svg.startswith("<svg") for svg in m["charts"].values())


def test_the_turn_browser_filters_and_opens_a_trail(rt, demo_turns):
    c = client(rt)
    rows = c.get("/api/turns?since=1h").get_json()["turns"]
    assert sorted(r["turn_id"] for r in rows) == sorted(demo_turns)
    confirms = c.get("/api/turns?outcome=confirm").get_json()["turns"]
    assert confirms and all("confirm" in (r["response_kind"], r["guardian_action"]) for r in confirms)
    trail = c.get(f"/api/turns/{demo_turns[0]}?org={ORG}").get_json()
    assert [e["layer"] for e in trail["record"]["trail"]][:3] == ["context", "brain", "guardian"]
    assert c.get("/api/turns/01NOSUCHTURN00000000000000").status_code == 404
    assert c.get("/api/turns?since=soon").status_code == 400


def test_replay_shadow_flags_alerts_and_llm_calls_answer(rt, demo_turns):
    c = client(rt)
    assert c.get(f"/api/turns/{demo_turns[0]}/replay").get_json()["changed"] is False
    shadow = c.get("/api/shadow").get_json()
    assert "report" in shadow and "guard" in shadow
    flags = c.get("/api/flags").get_json()
    assert flags["effective"] == "running" and flags["flags"]["version"]
    assert c.get("/api/alerts").get_json()["alerts"] == []
    assert c.get("/api/llm_calls").get_json() == {"llm_calls": []}


# --------------------------------------------------------------------------- the operator token


def _headers(rt, who: str, verifier: FakeVerifier) -> dict[str, str]:
    if who == "platform":
        return auth(rt)
    if who == "org":
        return auth(rt, platform=False)
    if who == "bearer":
        return {"Authorization": f"Bearer {credential(rt, 'u-kazu', ORG, platform=True)}"}
    if who == "wrong":
        return {"X-Charter-Admin-Token": "cho_not-a-credential-anyone-made"}
    if who in ("iam", "iam-unmapped", "iam-bad"):
        verifier.emails[ID_TOKEN] = "ops@acme.example" if who != "iam-unmapped" else "stranger@acme.example"
        if who == "iam-bad":
            verifier.emails.clear()
        return {"Authorization": f"Bearer {ID_TOKEN}"}
    return {}


@pytest.mark.parametrize(
    ("local", "who", "method", "status"),
    [
        (True, "nobody", "GET", 200),  # an explicit local stack's dashboard reads without identity
        (True, "nobody", "POST", 401),
        (True, "wrong", "POST", 401),
        (True, "platform", "POST", 200),
        (False, "nobody", "GET", 401),  # the cloud: nothing without an identity
        (False, "nobody", "POST", 401),
        (False, "wrong", "GET", 401),
        (False, "platform", "GET", 200),
        (False, "bearer", "POST", 200),
        (False, "org", "GET", 200),
        (False, "org", "POST", 403),  # stop/pause/resume touch every organisation
        (False, "iam", "POST", 200),
        (False, "iam-unmapped", "GET", 403),
        (False, "iam-bad", "GET", 401),
    ],
)
def test_who_may_read_and_who_may_press_the_buttons(local, who, method, status):
    rt, verifier = make_runtime(), FakeVerifier()
    from shared_lib.admin.identity import add_identity

    add_identity(rt.store, "Ops@Acme.example", ORG, "u-kazu", platform=True)
    c = client(rt, local=local, verifier=verifier)
    headers = _headers(rt, who, verifier)
    if method == "GET":
        r = c.get("/api/flags", headers=headers)
    else:
        r = c.post("/api/controls/pause", json=STOP, headers=headers)
    assert r.status_code == status, r.get_json()


def test_the_session_names_the_operator_and_a_cloud_dashboard_needs_one():
    rt = make_runtime()
    c = client(rt, local=False)
    assert c.get("/api/session").get_json()["operator"] is None
    session = c.get("/api/session", headers=auth(rt)).get_json()
    assert session["operator"] == {"org": ORG, "person": "u-kazu", "via": "credential", "platform": True}
    assert session["reads_need_identity"] is True


# --------------------------------------------------------------------------- emergency controls


def test_stop_writes_an_audited_kill_switch_override_and_the_next_turn_gets_the_fixed_reply(rt, notifier):
    c = client(rt)
    # WHEN an operator presses stop
    r = c.post("/api/controls/stop", json=STOP, headers=auth(rt))
    # THEN the override is on, audited (by the credential's person), alerted
    assert r.status_code == 200 and r.get_json()["effective"] == "stopped"
    override = rt.store.get(OVERRIDE_DOC)
    assert override["kill_switch"] is True and override["author"] == "u-kazu"
    assert [e["action"] for e in r.get_json()["audit"]][:1] == ["override_set"]
    assert [a.code for a in notifier.sent] == ["emergency.stop"]
    # AND the next message gets the kill-switch reply without the LLM
    turn_id = send(rt, TASK_CREATE)
    assert replies(rt)[-1] == rt.persona.message("kill_switch")
    rec = queries.find_record(rt.store, turn_id, org=ORG)
    assert rec is not None and rec.kill_switch and rec.arm == "kill_switch" and rec.tool_calls_executed == 0


def test_pause_holds_what_people_send_and_resume_answers_it_in_order_once(rt, notifier):
    c = client(rt)
    # GIVEN an operator pressed Pause
    r = c.post("/api/controls/pause", json=STOP, headers=auth(rt)).get_json()
    assert r["effective"] == "paused" and r["intake"]["state"] == "paused"
    assert rt.store.get(OVERRIDE_DOC) is None  # the brain is not switched: intake is paused
    # WHEN two people write while it is paused
    first = send(rt, "明日の会議の資料、どこにあるか分かる？")
    second = send(rt, TASK_CREATE, user="u-tanaka")
    # THEN both are accepted and held, nobody is answered and no record exists yet
    assert replies(rt) == [] and queries.find_record(rt.store, first, org=ORG) is None
    assert c.get("/api/flags", headers=auth(rt)).get_json()["intake"]["held"] == 2
    # WHEN the operator resumes
    r = c.post("/api/controls/resume", json=STOP, headers=auth(rt)).get_json()
    # THEN intake runs again and each held turn was served once, in the order they came, by the LLM
    assert r["effective"] == "running" and r["changed"] and r["released"] == 2
    records = [queries.find_record(rt.store, t, org=ORG) for t in (first, second)]
    assert all(rec is not None and rec.arm == "llm" for rec in records)
    sent = rt.channels["http"].sent  # type: ignore[attr-defined]
    assert [r.user_id for r in sent] == [USER, "u-tanaka"]
    assert [r.text for r in sent] == [rec.final_response for rec in records]
    assert [a.code for a in notifier.sent] == ["emergency.pause", "emergency.resume"]
    # AND a second resume releases nothing again, and the next message is served at once
    again = c.post("/api/controls/resume", json=STOP, headers=auth(rt)).get_json()
    assert again["changed"] is False and again["released"] == 0 and len(replies(rt)) == 2
    send(rt, "ありがとう！")
    assert len(replies(rt)) == 3


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/controls/stop", {"author": "u-kazu"}),
        ("/api/controls/explode", STOP),
        ("/api/controls/stop", ["not", "an", "object"]),
    ],
)
def test_a_control_needs_a_known_action_and_a_reason(rt, path, body):
    r = client(rt).post(path, json=body, headers=auth(rt))
    assert r.status_code == 400 and rt.store.get(OVERRIDE_DOC) is None


# --------------------------------------------------------------------------- scheduler tasks


def test_the_heartbeat_checks_that_the_previous_one_arrived(rt):
    c = client(rt)
    first = c.post("/tasks/heartbeat").get_json()["result"]
    second = c.post("/tasks/heartbeat").get_json()["result"]
    assert first["previous_arrived"] is None and second["previous_arrived"] is True


def test_the_cost_check_stops_the_llm_over_the_hard_limit(rt, demo_turns, monkeypatch):
    rt.settings = rt.settings.model_copy(update={"daily_hard_limit_usd": 0.000001})
    result = client(rt).post("/tasks/cost-check").get_json()["result"]
    assert result["stopped"] is True and rt.store.get(OVERRIDE_DOC)["author"] == "cost-check"


@pytest.mark.parametrize(
    ("email", "status"),
    [(SCHEDULER, 200), (SCHEDULER.upper(), 200), ("ops@acme.example", 403), (None, 401)],
)
def test_in_the_cloud_a_task_takes_the_schedulers_oidc_identity_only(rt, email, status):
    # GIVEN the cloud's admin app and a scheduler account from the settings
    verifier = FakeVerifier({ID_TOKEN: email} if email else {})
    c = client(rt, local=False, verifier=verifier)
    # WHEN a task is posted with an ID token of that identity
    r = c.post("/tasks/heartbeat", headers={"Authorization": f"Bearer {ID_TOKEN}"})
    # THEN only the scheduler's runs it; an operator's credential never does
    assert r.status_code == status, r.get_json()
    assert c.post("/tasks/jobs/watchdog", headers=auth(rt)).status_code == 401
    assert verifier.audiences and verifier.audiences[0] == "https://charter-admin.example.run.app"


def test_maintenance_runs_the_audit_and_the_threshold_check(rt, demo_turns):
    result = client(rt).post("/tasks/maintenance").get_json()["result"]
    assert set(result) == {"audit", "breaches", "alerts"} and isinstance(result["audit"]["clean"], bool)


# --------------------------------------------------------------------------- charts


def test_charts_escape_text_and_draw_gaps_and_thresholds():
    svg = line_chart(
        "<script>", [("a", 0.1), ("b", None), ("c", 0.3), ("d", 0.2)], threshold=0.25, percent=True
    )
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    assert svg.count('class="threshold"') == 1 and svg.count("<circle") == 1 and svg.count("<polyline") == 1
    assert "no data" in line_chart("empty", [("a", None)])
