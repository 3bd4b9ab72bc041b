"""The operator dashboard in a real headless browser (Debian's chromium and chromedriver).

The demo conversation arrives as signed webhooks; the dashboard's views (overview, turns, a
turn's trail, LLM calls, shadow, controls) show them with times in the organisation's zone and
multi-line text as written, and its emergency stop makes the next webhook get the kill-switch
reply. Japanese must be readable: a Japanese font is installed (``make system-deps``) and the
page draws two different kanji that must not come out as the same "tofu" box. A screenshot of
each view goes to ``test-artifacts/dashboard/``.

The stack is the whole local stack (``local_stack``: emulators, one functions-framework
process per layer, the admin function). The emergency stop writes a kill-switch override
into the stack's Firestore; the fixture clears it afterwards so later tests run normally.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.common.exceptions import (
    NoSuchElementException,
    StaleElementReferenceException,
    TimeoutException,
)
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from shared_lib.demo_data import CONVERSATION, DEMO_ORG, DEMO_ROOM
from shared_lib.features.finetune.state.staging import candidate_path
from shared_lib.ops.error_guide import GUIDE
from shared_lib.persona.catalogue import load_persona
from shared_lib.rollout.overrides import clear_override

pytestmark = pytest.mark.e2e
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "dashboard"
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
WAIT = 30


# --------------------------------------------------------------------------- the browser


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[WebDriver]:
    for binary in (CHROMIUM, CHROMEDRIVER):
        assert shutil.which(binary), f"{binary} is missing: apt-get install chromium chromium-driver"
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
        "--window-size=1400,1800",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def shot(driver: WebDriver, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(ARTIFACTS / f"{name}.png"))


def webhook(stack: Any, text: str, user: str, room: str = DEMO_ROOM) -> str:
    resp = stack.send("http", text, org=DEMO_ORG, room=room, user=user)
    assert resp.status == 200 and resp.body.get("turn_ids"), resp.body
    return str(resp.body["turn_ids"][0])


def rows_of(driver: WebDriver) -> set[str]:
    rows = driver.find_elements(By.CSS_SELECTOR, "#turns-table tbody tr[data-turn-id]")
    return {str(r.get_attribute("data-turn-id")) for r in rows}


def spans_through_observer(stack: Any, record: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The record's stored spans once the observer's (and its LLM calls', if it made any) are in."""
    where = [("trace_id", "==", str(record["trace_id"]))]
    spans = [doc for _, doc in stack.store.query("trace_spans", where=where)]
    names = {str(sp["name"]) for sp in spans}
    called = not record["usage"]["llm_calls"] or any(n.startswith("chat ") for n in names)
    return spans if "layer observer" in names and called else None


# --------------------------------------------------------------------------- the test


@pytest.fixture
def stack(local_stack: Any) -> Iterator[Any]:
    """The local stack; the kill-switch override the test writes is cleared afterwards."""
    try:
        yield local_stack
    finally:
        clear_override(local_stack.store, "e2e teardown", "browser test of the emergency stop is over")
        time.sleep(local_stack.flags_ttl)


# Two different kanji drawn with the page's own font: without a Japanese font both are the
# same missing-glyph box, so their pixels are equal.
KANJI_DIFFER = """
const draw = (ch) => {
  const c = document.createElement("canvas");
  c.width = 64; c.height = 64;
  const g = c.getContext("2d");
  g.fillStyle = "#fff"; g.fillRect(0, 0, 64, 64);
  g.fillStyle = "#000"; g.font = "48px " + getComputedStyle(document.body).fontFamily;
  g.fillText(ch, 8, 52);
  return Array.from(g.getImageData(0, 0, 64, 64).data).join(",");
};
return [draw("\u6f22") !== draw("\u5b57"), draw("\u6f22") !== draw("\u0378")];
"""


def open_turn(driver: WebDriver, wait: WebDriverWait, turn_id: str) -> None:
    """Click the turn's row, again if a refresh replaced the table under the click."""

    def clicked(d: WebDriver) -> bool:
        try:
            d.find_element(By.CSS_SELECTOR, f'#turns-table tr[data-turn-id="{turn_id}"]').click()
        except (StaleElementReferenceException, NoSuchElementException):
            return False
        return True

    wait.until(clicked)
    wait.until(ec.text_to_be_present_in_element((By.ID, "trail-id"), turn_id))


def view(driver: WebDriver, wait: WebDriverWait, name: str) -> None:
    driver.find_element(By.CSS_SELECTOR, f'#views a[data-view="{name}"]').click()
    wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-view") == name)


def test_the_dashboard_shows_the_demo_opens_a_trail_and_its_stop_button_stops_the_brain(stack, browser):
    # GIVEN the demo conversation and a message of two lines, sent as signed webhooks and recorded
    multi_line = "確認です。\n明日の会議は何時からですか？"
    turn_ids = [webhook(stack, text, speaker) for speaker, text in CONVERSATION]
    turn_ids.append(webhook(stack, multi_line, CONVERSATION[0][0]))
    records = [stack.record(DEMO_ORG, turn_id) for turn_id in turn_ids]
    # AND the first turn's spans exported by every layer it crossed (each process in batches)
    first_spans = stack.wait_for(lambda: spans_through_observer(stack, records[0]))
    wait = WebDriverWait(browser, WAIT)

    # WHEN the operator opens the dashboard
    browser.get(stack.admin_url + "/")
    wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-loaded") == "1")
    # THEN the overview counts the demo turns from the roll-ups, draws the charts in Tokyo time
    # (a conversation is a person in a room: the demo's speakers, at least; each message a turn)
    speakers = {speaker for speaker, _ in CONVERSATION}
    wait.until(lambda d: int(d.find_element(By.ID, "stat-turns").text or 0) >= len(turn_ids))
    conversations = int(browser.find_element(By.ID, "stat-conversations").text)
    assert len(speakers) <= conversations < int(browser.find_element(By.ID, "stat-turns").text)
    assert len(browser.find_elements(By.CSS_SELECTOR, "#chart-grid svg.chart")) == 7
    assert "JST" in browser.find_element(By.CSS_SELECTOR, "#chart-grid svg.chart").text
    assert browser.find_element(By.ID, "tz-badge").text == "times in Asia/Tokyo"
    # AND Japanese is drawn with real glyphs (a CJK font is installed)
    assert browser.execute_script(KANJI_DIFFER) == [True, True], "kanji render as tofu: no Japanese font"
    shot(browser, "1-overview")

    # WHEN the turns view is opened THEN every turn is listed, its time in the organisation's zone
    view(browser, wait, "turns")
    wait.until(lambda d: set(turn_ids) <= rows_of(d))
    first_time = browser.find_element(By.CSS_SELECTOR, "#turns-table tbody tr[data-turn-id] td").text
    assert first_time.endswith("(Asia/Tokyo)"), first_time
    shot(browser, "2-turns")

    # WHEN a turn is opened THEN its decision trail is shown layer by layer
    open_turn(browser, wait, turn_ids[0])
    wait.until(ec.visibility_of_element_located((By.ID, "trail")))
    trail_layers = [
        td.text for td in browser.find_elements(By.CSS_SELECTOR, "#trail-body .trail-table td:nth-child(2)")
    ]
    assert trail_layers[:6] == ["context", "brain", "guardian", "authorizer", "executor", "responder"]
    shot(browser, "3-trail")
    # AND its waterfall has a bar for every recorded span, each layer's and the LLM's among them,
    # placed on the turn's time axis
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#waterfall .wf-row"))
    rows = browser.find_elements(By.CSS_SELECTOR, "#waterfall .wf-row")
    shown = {str(r.get_attribute("data-span-id")) for r in rows if r.get_attribute("data-kind") != "queue"}
    assert {str(sp["span_id"]) for sp in first_spans} <= shown
    kinds = [r.get_attribute("data-kind") for r in rows]
    assert kinds[0] == "hop" and kinds.count("layer") >= 7, kinds
    assert ("llm" in kinds) == bool(records[0]["usage"]["llm_calls"]), kinds
    assert ("tool" in kinds) == bool(records[0]["tool_calls_executed"]), kinds
    for bar in browser.find_elements(By.CSS_SELECTOR, "#waterfall .wf-bar"):
        left = float(bar.value_of_css_property("left").removesuffix("px"))
        track = bar.find_element(By.XPATH, "..").size["width"]
        assert 0 <= left <= track and bar.size["width"] >= 1
    assert "待ち queue" in browser.find_element(By.CSS_SELECTOR, "#waterfall .wf-summary").text
    browser.execute_script("document.getElementById('waterfall').scrollIntoView()")
    shot(browser, "3c-waterfall")

    # WHEN a turn that failed is opened by its link (the first turn's record again, its LLM call
    # rate-limited and its tool refused by ChatWork)
    failed = {**records[0], "record_id": f"{turn_ids[0]}-failed", "turn_id": f"{turn_ids[0]}-failed"}
    failed["errors"] = [
        {
            "code": "rate_limit",
            "layer": "brain",
            "category": "llm_error",
            "severity": "high",
            "message": "429",
        }
    ]
    failed["execution_result"] = [
        {**x, "ok": False, "error_code": "external_api_error"} for x in records[0]["execution_result"]
    ]
    stack.store.set(f"orgs/{DEMO_ORG}/observability/{failed['record_id']}", failed)
    browser.get(f"{stack.admin_url}/?org={DEMO_ORG}&turn={failed['record_id']}")
    wait.until(ec.text_to_be_present_in_element((By.ID, "trail-id"), failed["record_id"]))
    # THEN each error shows what it means and the runbook's line, not a bare code
    codes = ["rate_limit"] + (["external_api_error"] if failed["execution_result"] else [])
    for code in codes:
        item = browser.find_element(By.CSS_SELECTOR, f'#trail-body .errors-explained li[data-code="{code}"]')
        assert GUIDE[code][0] in item.text and f"runbook: {GUIDE[code][1]}" in item.text, item.text
    shot(browser, "3d-trail-errors")

    # WHEN the two-line message's trail is opened THEN its input keeps its line break
    view(browser, wait, "turns")
    open_turn(browser, wait, turn_ids[-1])
    shown = [kv.text for kv in browser.find_elements(By.CSS_SELECTOR, "#trail-body .kv .v")]
    assert multi_line in shown, shown
    shot(browser, "3b-trail-multi-line")

    # WHEN the LLM calls and the shadow views are opened THEN they show their data
    view(browser, wait, "llm")
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#llm-calls-list details.call"))
    shot(browser, "4-llm-calls")
    view(browser, wait, "shadow")
    wait.until(lambda d: "samples" in d.find_element(By.ID, "rollout-body").text)
    shot(browser, "5-shadow")

    # WHEN the operator gives the token and presses the emergency stop
    view(browser, wait, "controls")
    token = stack.admin_token
    browser.find_element(By.ID, "admin-token").send_keys(token)
    browser.find_element(By.ID, "token-save").click()
    # THEN the header names the person the credential acts as (no name is typed anywhere)
    wait.until(lambda d: d.find_element(By.ID, "operator-badge").get_attribute("data-person") == "u-kazu")
    browser.find_element(By.ID, "control-reason").send_keys("browser test of the emergency stop")
    browser.find_element(By.ID, "btn-stop").click()
    wait.until(lambda d: d.find_element(By.ID, "run-state").get_attribute("data-state") == "stopped")
    assert browser.find_element(By.ID, "control-result").get_attribute("data-effective") == "stopped"
    assert "(Asia/Tokyo)" in browser.find_element(By.ID, "flags-body").text
    shot(browser, "6-controls-stopped")

    # THEN the next webhook gets the kill-switch reply (once other processes' flags caches expired)
    time.sleep(stack.flags_ttl)
    stopped = stack.record(
        DEMO_ORG, webhook(stack, "田中さんに明日までに資料作成のタスクをお願い", CONVERSATION[0][0])
    )
    assert stopped["kill_switch"] is True and stopped["arm"] == "kill_switch"
    assert stopped["final_response"] == load_persona().message("kill_switch")
    assert stopped["tool_calls_executed"] == 0


def test_the_jobs_and_fine_tuning_views_list_a_job_and_accept_a_staged_turn(stack, browser):
    # GIVEN a delegated job and a chat turn the demo organisation (opted in) stages for fine-tuning
    # (rooms of their own: the demo room's conversation waits for a confirmation)
    room = f"room-views-{time.time_ns()}"
    parent = stack.record(
        DEMO_ORG, webhook(stack, "営業チームの期限切れタスクを集めて要約して", "u-suzuki", room)
    )
    chat = webhook(stack, "今日は暑いね〜", "u-tanaka", room + "-chat")
    stack.record(DEMO_ORG, chat)
    wait = WebDriverWait(browser, WAIT)
    browser.get(stack.admin_url + "/")
    wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-loaded") == "1")
    browser.find_element(By.ID, "admin-token").send_keys(stack.admin_token)
    browser.find_element(By.ID, "token-save").click()

    # WHEN the operator opens the jobs view THEN the job is there, as its requester's, finished
    view(browser, wait, "jobs")
    browser.find_element(By.ID, "jobs-org").send_keys(DEMO_ORG)

    def job_row(d: WebDriver) -> list[str] | None:
        try:  # the rows of the last load; a load replacing them makes them stale: read again
            for row in d.find_elements(By.CSS_SELECTOR, "#jobs-table tbody tr"):
                cells = [td.text for td in row.find_elements(By.TAG_NAME, "td")]
                if cells and "営業チームの期限切れタスク" in cells[7] and cells[2] == "succeeded":
                    return cells
        except StaleElementReferenceException:
            return None
        d.find_element(By.CSS_SELECTOR, "#jobs-form button[type=submit]").click()  # load again
        return None

    try:
        cells = WebDriverWait(browser, 2 * WAIT, poll_frequency=1).until(job_row)
    except TimeoutException as exc:
        shot(browser, "7-jobs-timeout")
        table = browser.find_element(By.ID, "jobs-table").text
        raise AssertionError(f"no succeeded job row; the table: {table!r}; parent: {parent}") from exc
    assert cells[6] == "u-suzuki" and parent["final_response"]
    shot(browser, "7-jobs")

    # WHEN the CEO (the operator credential's person) accepts the staged chat turn: the memory
    # target stages it in the background after the reply, behind whatever work it has queued, so
    # the test waits for the candidate itself (its progress: the memory target's log), not a clock
    log = Path(stack.root) / "logs" / "memory.log"
    stack.wait_for(
        lambda: stack.store.get(candidate_path(DEMO_ORG, chat)),
        progress=lambda: log.stat().st_size if log.exists() else 0,
        what=f"the chat turn {chat} staged for fine-tuning",
    )
    view(browser, wait, "ft")
    browser.find_element(By.ID, "ft-org").send_keys(DEMO_ORG)

    def accept_button(d: WebDriver) -> Any:
        found = d.find_elements(By.CSS_SELECTOR, f'#ft-table button[data-ft="accept"][data-id="{chat}"]')
        if found:
            return found[0]
        d.find_element(By.CSS_SELECTOR, "#ft-form button[type=submit]").click()  # load again
        return None

    WebDriverWait(browser, 2 * WAIT, poll_frequency=1).until(accept_button).click()
    # THEN the candidate is accepted, by the credential's person, in the store the export reads
    path = f"orgs/{DEMO_ORG}/ft_candidates/{chat}"
    stack.wait_for(lambda: (stack.store.get(path) or {}).get("status") == "accepted")
    assert (stack.store.get(path) or {}).get("review", {}).get("by") == "u-kazu"
    shot(browser, "8-ft-accepted")
