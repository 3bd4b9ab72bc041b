"""``charter rollout rollback`` against the fake Cloud Run Admin API (infra/fake_cloud_run) on 127.0.0.1.

Every Charter service has two revisions: ``c-old`` served until the shift, ``c-new`` since. The
rollback guard's state document sits in a memory store handed in through ``args.store``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from infra.fake_cloud_run import FakeCloudRun
from shared_lib.adapters.memory_store import MemoryStore
from shared_lib.cli import build_parser
from shared_lib.delivery.topology import TOPOLOGY
from shared_lib.rollout import guard, revisions

PROJECT, REGION, TOKEN = "charter-prod", "asia-northeast1", "test-admin-token"
SHIFT = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SERVICES = [revisions.service_name(t) for t in TOPOLOGY.targets]


def old(service: str) -> str:
    return f"{service}-c-old"


def new(service: str) -> str:
    return f"{service}-c-new"


@pytest.fixture
def cloud_run(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeCloudRun]:
    # GIVEN every service promoted at SHIFT: c-new at 100 %, c-old kept tagged at 0 %
    with FakeCloudRun(token=TOKEN, clock=lambda: SHIFT + timedelta(minutes=10)) as fake:
        for service in SERVICES:
            fake.add_service(
                PROJECT,
                REGION,
                service,
                revisions=[f"{service}-c-older", old(service), new(service)],
                traffic=[
                    {"revision": new(service), "percent": 100, "tag": "c-new"},
                    {"revision": old(service), "percent": 0, "tag": "c-old"},
                ],
                updated=SHIFT.isoformat().replace("+00:00", "Z"),
            )
        monkeypatch.setenv("CHARTER_RUN_ADMIN_BASE", fake.url)
        monkeypatch.setenv("CHARTER_RUN_ADMIN_TOKEN", TOKEN)
        yield fake


def tripped(at: datetime) -> MemoryStore:
    store = MemoryStore()
    store.set(guard.STATE, {"last_trip_at": at, "reason": "rollback guard: tool_error_rate 0.2 > 0.05"})
    return store


def run(argv: list[str], store: MemoryStore | None, *, now: datetime) -> int:
    args = build_parser().parse_args(["rollout", "rollback", "--project", PROJECT, "--region", REGION, *argv])
    args.store = store
    args.clock = lambda: now
    return int(args.func(args))


def patched(fake: FakeCloudRun) -> dict[str, list[tuple[str, int]]]:
    """Service => the (revision, percent) of the traffic each PATCH asked for."""
    return {
        call["path"].rsplit("/", 1)[-1]: [(t["revision"], t["percent"]) for t in call["body"]["traffic"]]
        for call in fake.calls("PATCH")
    }


def test_a_trip_within_the_window_moves_every_service_back_to_its_previous_revision(
    cloud_run, tmp_path, capsys
):
    # GIVEN the guard tripped five minutes after the shift
    store = tripped(SHIFT + timedelta(minutes=5))
    decision_file = tmp_path / "rollback.json"
    # WHEN the check runs ten minutes after the shift with a 30 minute window
    code = run(
        ["--since-shift", "30m", "--decision-file", str(decision_file)],
        store,
        now=SHIFT + timedelta(minutes=10),
    )
    # THEN it rolled back (exit 1): one update per service, exactly its previous revision at 100 %
    assert code == 1
    calls = patched(cloud_run)
    assert sorted(calls) == sorted(SERVICES)
    for service, traffic in calls.items():
        assert [(r, p) for r, p in traffic if p > 0] == [(old(service), 100)]
        assert sum(p for _, p in traffic) == 100
        assert cloud_run.traffic(PROJECT, REGION, service)[0] == (old(service), 100, "c-old")
    # AND the culprit stays reachable under its tag, and the decision is written for the pipeline
    assert (new("charter-brain"), 0, "c-new") in cloud_run.traffic(PROJECT, REGION, "charter-brain")
    decision = json.loads(decision_file.read_text())
    assert decision["rollback"] is True and sorted(decision["rolled_back"]) == sorted(SERVICES)
    assert "rollback guard tripped" in capsys.readouterr().out


def test_dry_run_prints_the_plan_and_makes_no_update(cloud_run, tmp_path, capsys):
    # GIVEN a trip within the window
    store = tripped(SHIFT + timedelta(minutes=5))
    # WHEN the check runs with --dry-run
    code = run(
        ["--dry-run", "--decision-file", str(tmp_path / "d.json")], store, now=SHIFT + timedelta(minutes=10)
    )
    # THEN it says what it would do, for every service, and changes nothing
    out = capsys.readouterr().out
    assert code == 1 and out.startswith("would roll back: rollback guard tripped")
    assert f"charter-brain: {new('charter-brain')} -> {old('charter-brain')} (100 %)" in out
    assert cloud_run.calls("PATCH") == [] and not (tmp_path / "d.json").exists()
    assert cloud_run.traffic(PROJECT, REGION, "charter-brain")[0] == (new("charter-brain"), 100, "c-new")


@pytest.mark.parametrize(
    ("trip", "now", "why"),
    [
        (SHIFT + timedelta(minutes=5), SHIFT + timedelta(minutes=45), "outside the window"),
        (SHIFT - timedelta(hours=1), SHIFT + timedelta(minutes=10), "healthy within the window"),
        (None, SHIFT + timedelta(minutes=10), "healthy within the window"),
    ],
    ids=["trip-but-window-closed", "trip-before-the-shift", "never-tripped"],
)
def test_nothing_happens_outside_the_window_or_when_healthy(cloud_run, capsys, trip, now, why):
    # GIVEN a guard that tripped late, before the shift, or never
    store = tripped(trip) if trip else MemoryStore()
    # WHEN the check runs
    code = run(["--since-shift", "30m", "--health-url", f"{cloud_run.url}/probe"], store, now=now)
    # THEN no traffic moves
    assert code == 0 and cloud_run.calls("PATCH") == []
    assert why in capsys.readouterr().out


def test_a_failing_health_check_within_the_window_rolls_back(cloud_run):
    # GIVEN no guard trip, but a health check that answers 503
    cloud_run.set_probe(503)
    # WHEN the check runs within the window
    code = run(["--health-url", f"{cloud_run.url}/probe"], MemoryStore(), now=SHIFT + timedelta(minutes=2))
    # THEN every service went back
    assert code == 1 and sorted(patched(cloud_run)) == sorted(SERVICES)


def test_running_again_after_a_rollback_changes_nothing(cloud_run):
    # GIVEN a rollback already done (the services were updated at SHIFT + 10 minutes)
    store = tripped(SHIFT + timedelta(minutes=5))
    assert run([], store, now=SHIFT + timedelta(minutes=10)) == 1
    before = len(cloud_run.calls("PATCH"))
    # WHEN the check runs again, even with a health check failing
    cloud_run.set_probe(500)
    code = run(["--health-url", f"{cloud_run.url}/probe"], store, now=SHIFT + timedelta(minutes=12))
    # THEN it decides again but no service has an earlier revision in its traffic: no update
    assert code == 1 and len(cloud_run.calls("PATCH")) == before


def test_before_promotion_the_serving_revision_is_the_previous_one_so_nothing_moves(cloud_run):
    # GIVEN a service still before promotion: the candidate at 0 %, the stable revision at 100 %
    service = cloud_run.add_service(
        PROJECT,
        REGION,
        "charter-brain",
        revisions=[old("charter-brain"), new("charter-brain")],
        traffic=[
            {"revision": new("charter-brain"), "percent": 0, "tag": "c-new"},
            {"revision": old("charter-brain"), "percent": 100, "tag": "c-old"},
        ],
    )
    listed = [
        {"name": f"{service['name']}/revisions/{r}", "createTime": t}
        for r, t in (
            (old("charter-brain"), "2026-01-01T00:00:00Z"),
            (new("charter-brain"), "2026-01-01T01:00:00Z"),
        )
    ]
    # WHEN its plan is made THEN it stays where it is
    plan = revisions.plan_service("charter-brain", service, listed)
    assert plan.previous is None and plan.current == old("charter-brain")


def test_without_a_token_setting_the_metadata_servers_token_is_used(cloud_run, monkeypatch):
    # GIVEN no CHARTER_RUN_ADMIN_TOKEN, and a metadata server that hands out the API's token
    monkeypatch.delenv("CHARTER_RUN_ADMIN_TOKEN")
    asked: list[str] = []

    def from_metadata(client: Any = None) -> str:
        asked.append("token")
        return TOKEN

    monkeypatch.setattr(revisions, "metadata_token", from_metadata)
    # WHEN the check runs
    assert run([], MemoryStore(), now=SHIFT + timedelta(minutes=1)) == 0
    # THEN the metadata token was fetched once and sent with every call
    assert asked == ["token"]
    assert {c["authorization"] for c in cloud_run.calls()} == {f"Bearer {TOKEN}"}


def test_bad_input_and_a_refusing_api_exit_2(cloud_run, monkeypatch, tmp_path, capsys):
    # GIVEN no region anywhere THEN exit 2 with one line
    args = build_parser().parse_args(["rollout", "rollback", "--project", PROJECT])
    args.store = MemoryStore()
    assert args.func(args) == 2 and "no region" in capsys.readouterr().err
    # GIVEN no store configured (nothing in the environment, no .charter) THEN exit 2
    monkeypatch.setenv("CHARTER_HOME", str(tmp_path))
    args = build_parser().parse_args(["rollout", "rollback", "--region", REGION])
    assert args.func(args) == 2 and "no store configured" in capsys.readouterr().err
    # GIVEN a token the API refuses THEN the check could not run: exit 2, nothing changed
    monkeypatch.setenv("CHARTER_RUN_ADMIN_TOKEN", "wrong")
    assert run([], tripped(SHIFT), now=SHIFT + timedelta(minutes=1)) == 2
    assert "HTTP 401" in capsys.readouterr().err and cloud_run.calls("PATCH") == []


def test_watch_checks_every_interval_until_a_trip(cloud_run):
    # GIVEN a guard that trips at the third look, a clock that advances with each sleep
    now = [SHIFT + timedelta(minutes=1)]
    states: list[dict[str, Any] | None] = [
        None,
        None,
        {"last_trip_at": SHIFT + timedelta(minutes=3), "reason": "x"},
    ]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += timedelta(seconds=seconds)

    admin = revisions.CloudRunAdmin(PROJECT, REGION, token=lambda: TOKEN, base_url=cloud_run.url)
    # WHEN it watches with a one-minute interval
    check = revisions.watch_after_shift(
        admin,
        SERVICES,
        window=timedelta(minutes=30),
        guard_state=lambda: states.pop(0),
        clock=lambda: now[0],
        sleep=sleep,
        interval=timedelta(minutes=1),
        watch=True,
    )
    # THEN it slept twice, then decided to roll back
    assert check.rollback and slept == [60.0, 60.0]


def test_watch_ends_with_the_window_when_healthy(cloud_run):
    # GIVEN nothing ever trips
    now = [SHIFT + timedelta(minutes=25)]

    def sleep(seconds: float) -> None:
        now[0] += timedelta(seconds=seconds)

    admin = revisions.CloudRunAdmin(PROJECT, REGION, token=lambda: TOKEN, base_url=cloud_run.url)
    # WHEN it watches a 30 minute window with a two-minute interval
    check = revisions.watch_after_shift(
        admin,
        ["charter-brain"],
        window=timedelta(minutes=30),
        guard_state=lambda: None,
        clock=lambda: now[0],
        sleep=sleep,
        interval=timedelta(minutes=2),
        watch=True,
    )
    # THEN it stopped at the window's end without a rollback
    assert not check.rollback and now[0] == SHIFT + timedelta(minutes=30)


def test_revisions_are_read_across_pages_and_api_times_parse():
    # GIVEN the API's nanosecond times THEN they parse to the microsecond
    assert revisions.parse_time("2026-03-01T12:00:00.123456789Z") == datetime(
        2026, 3, 1, 12, 0, 0, 123456, tzinfo=UTC
    )
    assert revisions.parse_time("2026-03-01T12:00:00Z") == SHIFT
    # GIVEN a service with five revisions (the fake pages two at a time)
    with FakeCloudRun(token=TOKEN) as fake:
        names = [f"charter-brain-c-{i}" for i in range(5)]
        fake.add_service(
            PROJECT,
            REGION,
            "charter-brain",
            revisions=names,
            traffic=[{"revision": names[-1], "percent": 100}],
        )
        admin = revisions.CloudRunAdmin(PROJECT, REGION, token=lambda: TOKEN, base_url=fake.url)
        # WHEN they are listed THEN all five come back, over three pages
        listed = admin.list_revisions("charter-brain")
        assert sorted(r["name"].rsplit("/", 1)[-1] for r in listed) == sorted(names)
        assert len([c for c in fake.calls("GET") if c["path"].endswith("/revisions")]) == 3


def test_the_fake_refuses_a_stale_write(cloud_run):
    # GIVEN a service read, then changed by someone else
    admin = revisions.CloudRunAdmin(PROJECT, REGION, token=lambda: TOKEN, base_url=cloud_run.url)
    read = admin.get_service("charter-brain")
    admin.update_traffic("charter-brain", [revisions.TrafficTarget(old("charter-brain"), 100)], read)
    # WHEN the stale copy is written THEN the API refuses it (409), as Cloud Run does
    with pytest.raises(revisions.RevisionError, match="HTTP 409"):
        admin.update_traffic("charter-brain", [revisions.TrafficTarget(new("charter-brain"), 100)], read)


def test_decision_file_is_written_even_when_the_update_fails(cloud_run, tmp_path: Path):
    # GIVEN a trip, and an API that answers the first update with 503
    store = tripped(SHIFT + timedelta(minutes=5))
    cloud_run.fail_updates(1)
    # WHEN the check decides to roll back
    code = run(["--decision-file", str(tmp_path / "d.json")], store, now=SHIFT + timedelta(minutes=10))
    # THEN it exits 1 and the decision (for the pipeline's Terraform fallback) names the failure
    decision = json.loads((tmp_path / "d.json").read_text())
    assert code == 1 and decision["rollback"] is True and "HTTP 503" in decision["error"]
    assert decision["rolled_back"] == []


def test_a_given_shift_time_wins_over_the_services_last_update(cloud_run, capsys):
    # GIVEN a trip at 12:40, and the operator's word that the shift was at 12:30 (the services
    # say 12:00, which would put the trip outside a 30 minute window)
    store = tripped(SHIFT + timedelta(minutes=40))
    # WHEN the check runs at 12:45 with --shifted-at
    code = run(
        ["--dry-run", "--shifted-at", "2026-03-01T12:30:00Z"], store, now=SHIFT + timedelta(minutes=45)
    )
    # THEN the trip is within the window after the given shift
    assert code == 1 and "would roll back" in capsys.readouterr().out
    # AND a shift time without a time zone is bad input
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(["rollout", "rollback", "--shifted-at", "2026-03-01T12:30:00"])
    assert exit_info.value.code == 2
