"""Revision rollback: after a traffic shift, move every layer back to the revision that served before.

The pipeline promotes a new revision of every service at once (``traffic``). For the first
minutes after that shift, ``check_after_shift`` decides whether it went wrong: the rollback
guard tripped after the shift (its state document ``rollout_guard/state``, ``last_trip_at``:
``shared_lib.rollout.guard``) or a health check fails. If so, ``rollback_plan`` names, per
service, the revision to return to and ``apply_plan`` moves 100 % of its traffic there through
the Cloud Run Admin API v2. Outside the window, or when healthy, nothing happens: a trip an
hour later is the flags' business (the guard already turned the LLM arm off), not the image's.

The previous revision is read from the service's own traffic, never guessed from the revision
list: after a promotion Terraform keeps the revision that served before tagged at 0 %
(``terraform/modules/run_services``), so the previous revision is the newest traffic target
created before the newest serving one. Before a promotion (the candidate is newer than what
serves) and after a rollback there is none, so running the check again changes nothing.

``CloudRunAdmin`` is a small client over httpx: ``base_url`` is a setting
(``CHARTER_RUN_ADMIN_BASE``) so a fake can stand in (``infra/fake_cloud_run``); the bearer token
is ``CHARTER_RUN_ADMIN_TOKEN`` or the metadata server's (``metadata_token``, which tests replace).
Traffic is updated read-modify-write: the service as read, with only ``traffic`` replaced.

>>> plan = ServicePlan("charter-brain", current="charter-brain-c-new", previous="charter-brain-c-old",
...                    traffic=(TrafficTarget("charter-brain-c-old", 100, "c-old"),))
>>> plan.describe()
'charter-brain: charter-brain-c-new -> charter-brain-c-old (100 %)'
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import httpx

from shared_lib.errors import CharterError

DEFAULT_BASE = "https://run.googleapis.com"
METADATA_TOKEN_URL = (
    "http://metadata.google.internal/computeMetadata/v1/instance/service-accounts/default/token"
)
REVISION_TYPE = "TRAFFIC_TARGET_ALLOCATION_TYPE_REVISION"
LATEST_TYPE = "TRAFFIC_TARGET_ALLOCATION_TYPE_LATEST"
Doc = dict[str, Any]


class RevisionError(CharterError):
    """The Cloud Run Admin API failed or refused a call (the message names it)."""


def service_name(target: str) -> str:
    """The Cloud Run service of a functions-framework target (as modules/run_services names it)."""
    return "charter-" + target.replace("_", "-")


def metadata_token(client: httpx.Client | None = None) -> str:
    """An access token of the machine's service account, from the metadata server (Cloud Build, Cloud Run)."""
    own = client or httpx.Client(timeout=10.0)
    try:
        response = own.get(METADATA_TOKEN_URL, headers={"Metadata-Flavor": "Google"})
        response.raise_for_status()
        return str(response.json()["access_token"])
    except (httpx.HTTPError, KeyError, ValueError) as exc:
        raise RevisionError(f"no access token from the metadata server: {exc}") from exc
    finally:
        if client is None:
            own.close()


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 time of the API (``2026-01-01T00:00:00.123456Z``); None when absent."""
    if not value:
        return None
    text = str(value).replace("Z", "+00:00")
    head, _, rest = text.partition(".")
    if rest:  # the API gives up to nanoseconds; Python reads microseconds
        digits = rest[: len(rest) - len(rest.lstrip("0123456789"))]
        text = f"{head}.{digits[:6].ljust(6, '0')}{rest[len(digits) :]}"
    return datetime.fromisoformat(text)


@dataclass(frozen=True)
class TrafficTarget:
    """One entry of a service's traffic: a revision (short name), its percent and its tag."""

    revision: str
    percent: int
    tag: str = ""

    def as_api(self) -> Doc:
        entry: Doc = {"type": REVISION_TYPE, "revision": self.revision, "percent": self.percent}
        if self.tag:
            entry["tag"] = self.tag
        return entry


class CloudRunAdmin:
    """The few Cloud Run Admin API v2 calls a rollback needs, for one project and region."""

    def __init__(
        self,
        project: str,
        region: str,
        *,
        token: Callable[[], str],
        base_url: str = DEFAULT_BASE,
        client: httpx.Client | None = None,
        operation_wait: timedelta = timedelta(minutes=3),
    ) -> None:
        self.project, self.region = project, region
        self.base_url = base_url.rstrip("/")
        self._token = token
        self._bearer: str | None = None
        self.client = client or httpx.Client(timeout=30.0)
        self.operation_wait = operation_wait

    def _request(self, method: str, path: str, **kwargs: Any) -> Doc:
        if self._bearer is None:
            self._bearer = self._token()
        url = f"{self.base_url}/v2/{path}"
        try:
            response = self.client.request(
                method, url, headers={"Authorization": f"Bearer {self._bearer}"}, **kwargs
            )
        except httpx.HTTPError as exc:
            raise RevisionError(f"{method} {path}: {exc}") from exc
        if response.status_code >= 300:
            raise RevisionError(f"{method} {path}: HTTP {response.status_code} {response.text[:300]}")
        body: Doc = response.json()
        return body

    def service_path(self, service: str) -> str:
        return f"projects/{self.project}/locations/{self.region}/services/{service}"

    def get_service(self, service: str) -> Doc:
        return self._request("GET", self.service_path(service))

    def list_revisions(self, service: str) -> list[Doc]:
        """Every revision of ``service`` (all pages)."""
        found: list[Doc] = []
        token = ""
        while True:
            params = {"pageToken": token} if token else {}
            page = self._request("GET", self.service_path(service) + "/revisions", params=params)
            found += page.get("revisions") or []
            token = str(page.get("nextPageToken") or "")
            if not token:
                return found

    def update_traffic(self, service: str, traffic: Iterable[TrafficTarget], current: Doc) -> Doc:
        """Replace the traffic of ``service`` (``current`` as read; its etag guards the write)."""
        body = {**current, "traffic": [t.as_api() for t in traffic]}
        operation = self._request("PATCH", self.service_path(service), json=body)
        waited, delay = 0.0, 0.1  # a traffic change is done in seconds: poll soon, then back off
        while not operation.get("done"):
            if waited >= self.operation_wait.total_seconds():
                raise RevisionError(f"update of {service} did not finish: {operation.get('name')}")
            time.sleep(delay)
            waited, delay = waited + delay, min(delay * 2, 5.0)
            operation = self._request("GET", str(operation["name"]))
        if "error" in operation:
            raise RevisionError(f"update of {service} failed: {operation['error']}")
        return operation


def _short(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def serving_traffic(service: Doc) -> list[TrafficTarget]:
    """The service's traffic targets (``LATEST`` resolved to the latest ready revision)."""
    latest = _short(str(service.get("latestReadyRevision") or ""))
    out = []
    for entry in service.get("traffic") or []:
        revision = latest if entry.get("type") == LATEST_TYPE else _short(str(entry.get("revision") or ""))
        if revision:
            out.append(TrafficTarget(revision, int(entry.get("percent") or 0), str(entry.get("tag") or "")))
    return out


@dataclass(frozen=True)
class ServicePlan:
    """What a rollback does to one service: ``traffic`` replaces its traffic; no previous, no change."""

    service: str
    current: str | None
    previous: str | None
    traffic: tuple[TrafficTarget, ...] = ()
    reason: str = ""

    def describe(self) -> str:
        if self.previous is None:
            return f"{self.service}: stays on {self.current or '?'} ({self.reason})"
        return f"{self.service}: {self.current} -> {self.previous} (100 %)"


def plan_service(name: str, service: Doc, revisions: Iterable[Doc]) -> ServicePlan:
    """The previous revision of one service and its new traffic (see the module docstring)."""
    created: dict[str, datetime] = {}
    for revision in revisions:
        at = parse_time(revision.get("createTime"))
        if at is not None:
            created[_short(str(revision.get("name")))] = at
    targets = serving_traffic(service)
    serving = [t.revision for t in targets if t.percent > 0]
    if not serving or any(r not in created for r in serving):
        return ServicePlan(name, None, None, reason="the serving revision is not listed")
    current = max(serving, key=created.__getitem__)
    older = [t.revision for t in targets if t.revision in created and created[t.revision] < created[current]]
    if not older:
        return ServicePlan(name, current, None, reason="no earlier revision in its traffic")
    previous = max(older, key=created.__getitem__)
    tags = {t.revision: t.tag for t in targets if t.tag}
    # previous at 100 %, every other tagged revision kept reachable at 0 % (for a look at the culprit)
    traffic = [TrafficTarget(previous, 100, tags.get(previous, ""))]
    traffic += [TrafficTarget(r, 0, tag) for r, tag in tags.items() if r != previous]
    return ServicePlan(name, current, previous, tuple(traffic))


def rollback_plan(admin: CloudRunAdmin, services: Iterable[str]) -> tuple[list[ServicePlan], dict[str, Doc]]:
    """The plan of every service, and each service as read (``apply_plan`` writes over it)."""
    plans, read = [], {}
    for name in services:
        read[name] = admin.get_service(name)
        plans.append(plan_service(name, read[name], admin.list_revisions(name)))
    return plans, read


def apply_plan(admin: CloudRunAdmin, plans: Iterable[ServicePlan], read: Mapping[str, Doc]) -> list[str]:
    """Move each service with a previous revision back to it; the services changed."""
    changed = []
    for plan in plans:
        if plan.previous is not None:
            admin.update_traffic(plan.service, plan.traffic, read[plan.service])
            changed.append(plan.service)
    return changed


def last_shift(services: Iterable[Doc]) -> datetime | None:
    """When traffic last moved: the latest ``updateTime`` of the services (a shift updates them all)."""
    times = [t for t in (parse_time(s.get("updateTime")) for s in services) if t is not None]
    return max(times) if times else None


@dataclass(frozen=True)
class ShiftCheck:
    """The verdict after a shift: roll back (with reasons) or not (with why not)."""

    rollback: bool
    reasons: list[str] = field(default_factory=list)
    shifted_at: datetime | None = None
    window_ends: datetime | None = None


def check_after_shift(
    *,
    now: datetime,
    shifted_at: datetime | None,
    window: timedelta,
    guard_state: Mapping[str, Any] | None,
    health_failures: Callable[[], list[str]] = list,
) -> ShiftCheck:
    """Roll back when, within ``window`` after the shift, the guard tripped or a health check fails."""
    if shifted_at is None:
        return ShiftCheck(False, ["no traffic shift found"])
    ends = shifted_at + window
    if now > ends:
        return ShiftCheck(
            False, [f"outside the window: the shift was at {shifted_at.isoformat()}"], shifted_at, ends
        )
    reasons = []
    trip = (guard_state or {}).get("last_trip_at")
    if isinstance(trip, datetime) and shifted_at <= trip <= now:
        reasons.append(
            f"rollback guard tripped at {trip.isoformat()}: {(guard_state or {}).get('reason', '')}"
        )
    reasons += [f"health check failed: {failure}" for failure in health_failures()]
    return ShiftCheck(bool(reasons), reasons, shifted_at, ends)


def http_health(urls: Iterable[str], client: httpx.Client) -> Callable[[], list[str]]:
    """A health check over ``urls``: each must answer GET with 2xx."""

    def failures() -> list[str]:
        out = []
        for url in urls:
            try:
                status = client.get(url).status_code
            except httpx.HTTPError as exc:
                out.append(f"{url}: {type(exc).__name__}")
                continue
            if not 200 <= status < 300:
                out.append(f"{url}: HTTP {status}")
        return out

    return failures


def watch_after_shift(
    admin: CloudRunAdmin,
    services: Iterable[str],
    *,
    window: timedelta,
    guard_state: Callable[[], Mapping[str, Any] | None],
    health_failures: Callable[[], list[str]] = list,
    clock: Callable[[], datetime],
    sleep: Callable[[float], None] = time.sleep,
    interval: timedelta = timedelta(seconds=30),
    watch: bool = False,
    shifted_at: datetime | None = None,
) -> ShiftCheck:
    """``check_after_shift`` once, or (``watch``) every ``interval`` until a rollback or the window's end.

    The shift is ``shifted_at`` when given, else the services' last update (``last_shift``).
    """
    names = list(services)
    while True:
        shift = shifted_at or last_shift(admin.get_service(name) for name in names)
        check = check_after_shift(
            now=clock(),
            shifted_at=shift,
            window=window,
            guard_state=guard_state(),
            health_failures=health_failures,
        )
        if check.rollback or not watch or check.window_ends is None or clock() >= check.window_ends:
            return check
        sleep(max(0.0, min(interval, check.window_ends - clock()).total_seconds()))
