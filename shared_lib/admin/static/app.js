// Charter operator dashboard. Plain browser JavaScript, no libraries, no build step.
// Every value from the server is inserted as text (never as HTML), except the SVG charts,
// which the server renders with all text escaped.
"use strict";

const state = { token: sessionStorage.getItem("charterAdminToken") || "", openTurn: null, tz: "Asia/Tokyo",
                view: "overview" };
const VIEWS = ["overview", "turns", "trail", "llm", "shadow", "controls", "memory", "jobs", "ft"];

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("data-")) node.setAttribute(key, value);
    else node[key] = value;
  }
  for (const child of children) {
    if (child === undefined || child === null) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function $(id) { return document.getElementById(id); }

function say(text, isError) {
  const m = $("message");
  m.textContent = text || "";
  m.className = isError ? "message error" : "message";
}

async function api(path, options) {
  const headers = Object.assign({ "Accept": "application/json" }, (options && options.headers) || {});
  if (state.token) headers["X-Charter-Admin-Token"] = state.token;
  const response = await fetch(path, Object.assign({}, options || {}, { headers }));
  let body = null;
  try { body = await response.json(); } catch (e) { body = null; }
  if (!response.ok) {
    const detail = body && (body.detail || body.error) ? (body.detail || body.error) : response.statusText;
    throw new Error(`${response.status}: ${detail}`);
  }
  return body;
}

const fmt = {
  ms: (v) => (v === null || v === undefined ? "–" : v >= 1000 ? `${(v / 1000).toFixed(1)} s` : `${Math.round(v)} ms`),
  pct: (v) => (v === null || v === undefined ? "–" : `${(v * 100).toFixed(1)} %`),
  num: (v, d) => (v === null || v === undefined ? "–" : Number(v).toFixed(d)),
  usd: (v) => (v === null || v === undefined ? "–" : `$${Number(v).toFixed(4)}`),
  // every time in the organisation's zone, the zone shown: "2026-11-24 14:05 (Asia/Tokyo)"
  time: (iso) => {
    if (!iso) return "–";
    const at = new Date(iso);
    if (Number.isNaN(at.getTime())) return String(iso);
    const parts = {};
    for (const p of new Intl.DateTimeFormat("en-CA", { timeZone: state.tz, year: "numeric", month: "2-digit",
      day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit", hourCycle: "h23" }).formatToParts(at)) {
      parts[p.type] = p.value;
    }
    return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second} (${state.tz})`;
  },
};

// ---------------------------------------------------------------- views

function show(view) {
  state.view = VIEWS.includes(view) ? view : "overview";
  for (const section of document.querySelectorAll("section[data-in-view]")) {
    section.hidden = section.getAttribute("data-in-view") !== state.view;
  }
  for (const link of document.querySelectorAll("#views a[data-view]")) {
    link.classList.toggle("active", link.getAttribute("data-view") === state.view);
  }
  document.body.setAttribute("data-view", state.view);
}

function loadView() {
  const loaders = { overview: [loadStats, loadCharts, loadAlerts], turns: [loadTurns], trail: [],
                    llm: [loadLlmCalls, loadEvaluations], shadow: [loadRollout], controls: [loadFlags],
                    memory: [loadMemory], jobs: [loadJobs], ft: [loadFt] };
  return Promise.allSettled((loaders[state.view] || []).map((f) => f()));
}

// ---------------------------------------------------------------- today and charts

async function loadStats() {
  const s = await api("/api/stats");
  $("today-day").textContent = `${s.day} (${s.timezone})`;
  $("charts-tz").textContent = s.timezone;
  $("stat-conversations").textContent = s.conversations;
  $("stat-turns").textContent = s.turns;
  $("stat-avg-response").textContent = fmt.ms(s.avg_response_ms);
  $("stat-confidence").textContent = fmt.num(s.mean_confidence, 2);
  $("stat-confirm").textContent = `${s.confirmations} (${fmt.pct(s.confirmation_rate)})`;
  $("stat-block").textContent = `${s.blocks} (${fmt.pct(s.block_rate)})`;
  $("stat-cost-today").textContent = `${fmt.usd(s.cost.cost_today_usd)} / ${fmt.usd(s.cost.daily_budget_usd)}`;
  $("stat-cost-month").textContent = fmt.usd(s.cost.cost_month_usd);
  $("stat-projection").textContent = fmt.usd(s.cost.projected_month_usd);
}

async function loadCharts() {
  const m = await api("/api/metrics?hours=24&step=60");
  const grid = $("chart-grid");
  grid.replaceChildren();
  for (const [name, svg] of Object.entries(m.charts)) {
    const box = el("div", { class: "chart-box", "data-chart": name });
    box.innerHTML = svg; // server-rendered SVG, text escaped there
    grid.append(box);
  }
}

// ---------------------------------------------------------------- turns and the trail

function filters() {
  const q = new URLSearchParams();
  for (const [key, id] of [["since", "f-since"], ["org", "f-org"], ["arm", "f-arm"], ["outcome", "f-outcome"]]) {
    const v = $(id).value.trim();
    if (v) q.set(key, v);
  }
  return q.toString();
}

async function loadTurns() {
  const data = await api(`/api/turns?${filters()}`);
  const body = $("turns-table").querySelector("tbody");
  body.replaceChildren();
  for (const t of data.turns) {
    const row = el("tr", { "data-turn-id": t.turn_id, "data-org": t.org_id, class: `kind-${t.response_kind}`,
                           title: "open the decision trail" },
      el("td", {}, fmt.time(t.timestamp)), el("td", {}, t.org_id), el("td", {}, t.user_id), el("td", {}, t.arm),
      el("td", {}, t.response_kind), el("td", {}, t.guardian_action), el("td", {}, t.auth_result),
      el("td", {}, fmt.num(t.llm_confidence, 2)), el("td", {}, Math.round(t.total_duration_ms)),
      el("td", {}, fmt.num(t.cost_usd, 5)), el("td", { class: "msg" }, t.input_message));
    row.addEventListener("click", () => openTrail(t.turn_id, t.org_id));
    body.append(row);
  }
  if (!data.turns.length) body.append(el("tr", {}, el("td", { colSpan: 11, class: "muted" }, "no turns")));
}

function kv(label, ...value) {
  return el("div", { class: "kv" }, el("span", { class: "k" }, label), el("span", { class: "v" }, ...value));
}

function renderTrail(data) {
  const r = data.record;
  const rows = r.trail.map((e, i) => el("tr", {}, el("td", {}, i + 1), el("td", {}, e.layer), el("td", {}, e.outcome),
    el("td", {}, e.reason_code), el("td", {}, fmt.num(e.duration_ms, 2)), el("td", { class: "msg" }, e.detail)));
  const tools = r.selected_tools.map((t) => el("li", {}, `${t.tool_name} ${JSON.stringify(t.parameters)}`));
  const results = r.execution_result.map((x) =>
    el("li", {}, `${x.tool_name}: ${x.ok ? "ok" : "error " + x.error_code}${x.dry_run ? " (dry run)" : ""}`));
  const calls = data.llm_calls.map(callDetails);
  const cmp = data.shadow_comparison;
  return el("div", { class: "trail" },
    kv("turn", `${r.record_id} · org ${r.organization_id} · user ${r.user_id} · room ${r.room_id} · ${r.channel}`),
    kv("received", `${fmt.time(r.timestamp)} · steps ${r.step_count} · trace ${r.trace_id || "–"}`),
    kv("input", r.input_message),
    kv("context", r.context_summary || "–"),
    kv("flags", `arm ${r.flags_arm} (${r.flags_reason}) · flags ${r.flags_version || "–"}${r.kill_switch ? " · KILL SWITCH" : ""}`),
    el("table", { class: "trail-table" },
      el("thead", {}, el("tr", {}, ...["#", "layer", "outcome", "reason", "ms", "detail"].map((h) => el("th", {}, h)))),
      el("tbody", {}, ...rows)),
    kv("proposal", `${r.output_type || "–"} by ${r.arm} (${r.llm_model}) · confidence ${fmt.num(r.llm_confidence, 2)}`),
    kv("reasoning", r.llm_reasoning || "–"),
    kv("tools", tools.length ? el("ul", {}, ...tools) : "–"),
    kv("guardian", `${r.guardian_action} (${r.guardian_reason || "–"})`),
    kv("authorization", `${r.auth_result} (${r.auth_reason || "–"})`),
    kv("execution", results.length ? el("ul", {}, ...results) : `nothing (${r.execution_skipped_reason || "–"})`),
    kv("reply", `${r.response_kind}${r.response_sent ? " (sent)" : ""}: ${r.final_response}`),
    kv("time", `total ${fmt.ms(r.total_duration_ms)} · LLM ${fmt.ms(r.llm_duration_ms)} · tools ${fmt.ms(r.tool_duration_ms)}`),
    kv("usage", `${r.usage.llm_calls} LLM call(s) · in ${r.usage.input_tokens} · out ${r.usage.output_tokens} · cache read ${r.usage.cache_read_input_tokens} · ${fmt.usd(r.cost_usd)}`),
    kv("LLM calls", calls.length ? el("div", {}, ...calls) : "–"),
    kv("errors", explainedErrors(data)),
    kv("shadow", cmp ? (cmp.all_agree ? `${cmp.candidate_arm} candidate agrees` : `${cmp.candidate_arm} candidate differs: ${(cmp.mismatches || []).join(", ")}`) : "–"));
}

async function openTrail(turnId, org) {
  state.openTurn = { turnId, org };
  const q = org ? `?org=${encodeURIComponent(org)}` : "";
  const data = await api(`/api/turns/${encodeURIComponent(turnId)}${q}`);
  $("trail-id").textContent = turnId;
  $("trail-empty").hidden = true;
  $("trail-body").replaceChildren(renderTrail(data));
  $("replay-result").replaceChildren();
  loadWaterfall(turnId, org);
  if (location.hash !== "#trail") history.pushState(null, "", "#trail");
  show("trail");
}

async function replayOpenTurn() {
  if (!state.openTurn) return;
  const { turnId, org } = state.openTurn;
  const q = org ? `?org=${encodeURIComponent(org)}` : "";
  const r = await api(`/api/turns/${encodeURIComponent(turnId)}/replay${q}`);
  const rows = ["flags", "guardian", "authorization", "execution"].map((s) =>
    el("tr", { class: r.recorded[s] !== r.replayed[s] ? "changed" : "" },
      el("td", {}, s), el("td", {}, r.recorded[s]), el("td", {}, r.replayed[s])));
  $("replay-result").replaceChildren(
    el("table", { class: "trail-table" },
      el("thead", {}, el("tr", {}, el("th", {}, "stage"), el("th", {}, "recorded"), el("th", {}, "today"))),
      el("tbody", {}, ...rows)),
    el("p", { class: "muted" }, r.changed ? `${r.differences.length} difference(s)` : "no difference",
      ` · LLM calls: ${r.llm_calls}${r.masked_parameters ? " · parameters were masked in the record" : ""}`));
}

// ---------------------------------------------------------------- rollout, flags, alerts

async function loadRollout() {
  const d = await api("/api/shadow?since=7d");
  const rep = d.report;
  const all = rep.agreement && rep.agreement.all ? rep.agreement.all : { rate: null, total: 0 };
  const guard = d.guard || {};
  $("rollout-body").replaceChildren(
    kv("samples", `${rep.samples} comparison(s)${d.sample && d.sample.limited ? ` (the newest ${d.sample.latest} of the last 7 days)` : " (last 7 days)"} · candidate failures ${rep.candidate_failures}`),
    kv("agreement", `${fmt.pct(all.rate)} of ${all.total}`),
    kv("verdict", rep.verdict ? `${rep.verdict.decision || rep.verdict.verdict || JSON.stringify(rep.verdict)}` : "–"),
    kv("rollback guard", guard.tripped && guard.tripped.length ? `TRIPPED: ${guard.tripped.join("; ")}` : "within thresholds"),
    kv("guard window", guard.totals ? `${guard.totals.turns} LLM turn(s) since ${fmt.time(guard.window_start)} · cost today ${fmt.usd(guard.day_cost_usd)}` : "–"));
}

async function loadFlags() {
  const f = await api("/api/flags");
  const badge = $("run-state");
  badge.textContent = f.effective;
  badge.setAttribute("data-state", f.effective);
  const doc = f.flags || {};
  const o = f.override;
  const audit = (f.audit || []).map((a) => el("li", {}, `${fmt.time(a.at)} ${a.action} by ${a.author}: ${a.reason}`));
  $("flags-body").replaceChildren(
    kv("state", el("strong", { id: "control-state" }, f.effective)),
    kv("flags", f.flags ? `version ${doc.version} · brain_mode ${doc.brain_mode} · canary ${doc.canary_percent} % · kill_switch ${doc.kill_switch ? "on" : "off"} · model ${doc.model}` : `unusable: ${f.flags_error}`),
    kv("override", o ? `${o.kill_switch ? "kill switch" : ""}${o.brain_mode ? "brain_mode " + o.brain_mode : ""} by ${o.author} until ${fmt.time(o.expires_at)} (${f.override_active ? "active" : "expired"}): ${o.reason}` : "none"),
    kv("audit", audit.length ? el("ul", {}, ...audit) : "–"));
}

async function loadAlerts() {
  const d = await api("/api/alerts?since=24h");
  const list = $("alerts-list");
  list.replaceChildren(...d.alerts.map((a) => el("li", { class: `sev-${a.severity || "warning"}` },
    `${fmt.time(a.at)} [${a.severity || "warning"}] ${a.code}: ${a.message || ""} (${a.notification || "pending"})`)));
  if (!d.alerts.length) list.append(el("li", { class: "muted" }, "no alerts"));
}

function callDetails(c) {
  const head = `${fmt.time(c.at)} · ${c.call_type} · ${c.model} · ${c.status} · ${fmt.ms(c.latency_ms)} · ` +
    `${c.total_tokens} tokens · ${fmt.usd(c.cost_usd)} · turn ${c.turn_id || "–"}${c.error ? " · " + c.error : ""}`;
  const body = c.prompt_messages
    ? `PROMPT\n${JSON.stringify(c.prompt_messages, null, 2)}\n\nRESPONSE\n${c.response_text || JSON.stringify(c.response_content, null, 2)}`
    : "numbers only (the LLM call log is not wired in this runtime)";
  return el("details", { class: `call status-${c.status}` }, el("summary", {}, head), el("pre", {}, body));
}

async function loadLlmCalls() {
  const d = await api("/api/llm_calls?limit=20");
  const list = $("llm-calls-list");
  list.replaceChildren(...d.llm_calls.map(callDetails));
  if (!d.llm_calls.length) list.append(el("p", { class: "muted" }, "no LLM calls logged"));
}

// the evaluator monitor (seed 001 §20.4): recent Best-of-N runs and the judge's average spread
async function loadEvaluations() {
  const d = await api("/api/evaluations?limit=20");
  $("judge-spread").textContent = fmt.num(d.judge_spread_mean, 3);
  const body = $("evaluations-table").querySelector("tbody");
  body.replaceChildren(...d.evaluations.map((e) => el("tr", { "data-turn-id": e.turn_id },
    el("td", {}, fmt.time(e.at)), el("td", {}, e.org_id), el("td", {}, String(e.difficulty)),
    el("td", {}, `${e.n} of ${e.planned_n}`), el("td", {}, e.judge),
    el("td", {}, e.fallback ? "templates" : fmt.num(e.chosen_score, 3)), el("td", {}, fmt.num(e.spread, 3)),
    el("td", {}, e.regenerated ? "yes" : "no"), el("td", {}, e.refined ? "yes" : "no"), el("td", {}, fmt.usd(e.cost_usd)))));
}

// ---------------------------------------------------------------- memory (issue 20)

async function loadMemory() {
  const org = $("memory-org").value.trim();
  const body = $("memory-table").querySelector("tbody");
  const hits = $("memory-hits").querySelector("tbody");
  if (!org) { body.replaceChildren(); hits.replaceChildren(); return; }
  const d = await api(`/api/memory?org=${encodeURIComponent(org)}`);
  body.replaceChildren(...d.items.map((i) => el("tr", { "data-id": i.id },
    el("td", {}, i.id), el("td", {}, i.kind), el("td", {}, i.title || ""), el("td", {}, i.text),
    el("td", {}, String(i.min_level)), el("td", {}, i.created_by || ""), el("td", {}, fmt.time(i.created_at)),
    el("td", {}, el("button", { type: "button", "data-delete": i.id }, "delete")))));
  const q = $("memory-query").value.trim();
  if (!q) { hits.replaceChildren(); return; }
  const who = $("memory-as").value.trim();
  const s = await api(`/api/memory/search?org=${encodeURIComponent(org)}&q=${encodeURIComponent(q)}` +
    (who ? `&as=${encodeURIComponent(who)}` : ""));
  hits.replaceChildren(...s.hits.map((h, n) => el("tr", {},
    el("td", {}, String(n + 1)), el("td", {}, h.source_kind), el("td", {}, h.source_id), el("td", {}, h.text),
    el("td", {}, fmt.num(h.score, 4)), el("td", {}, h.keyword_score == null ? "–" : fmt.num(h.keyword_score, 2)),
    el("td", {}, h.vector_score == null ? "–" : fmt.num(h.vector_score, 3)))));
}

async function memoryWrite(path, payload, done) {
  try {
    await api(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(payload) });
    say(done);
    await loadMemory();
  } catch (e) { say(`refused: ${e.message}`, true); }
}

// every write is the operator's: the person its credential names (shown in the header)
function addMemory() {
  const org = $("memory-org").value.trim();
  if (!org) { say("an organisation is required", true); return; }
  memoryWrite("/api/memory", { org, kind: $("memory-kind").value, title: $("memory-title").value.trim(),
    min_level: Number($("memory-min-level").value) || 1, text: $("memory-text").value }, "added");
}

function deleteMemory(id) {
  const org = $("memory-org").value.trim();
  if (!org) { say("an organisation is required", true); return; }
  memoryWrite("/api/memory/delete", { org, id }, `deleted ${id}`);
}

// ---------------------------------------------------------------- controls

async function control(action) {
  const reason = $("control-reason").value.trim();
  if (!reason) { say("a reason is required", true); return; }
  try {
    const r = await api(`/api/controls/${action}`, {
      method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ reason, ttl_hours: Number($("control-ttl").value) || 0 }),
    });
    $("control-result").textContent = `${action}: ${r.changed ? "done" : "no change"} — now ${r.effective}`;
    $("control-result").setAttribute("data-effective", r.effective);
    say(`${action} applied`);
    await Promise.all([loadFlags(), loadAlerts()]);
  } catch (e) {
    $("control-result").textContent = `${action} refused: ${e.message}`;
    say(`${action} refused: ${e.message}`, true);
  }
}

async function autoOff() {
  const org = $("auto-off-org").value.trim();
  if (!org) { say("an organisation is required", true); return; }
  try {
    const r = await api("/api/approvals/auto_off", {
      method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ org, user: $("auto-off-user").value.trim() }),
    });
    $("auto-off-result").textContent = `auto-approve off in ${org} at ${fmt.time(r.off.off_at)}`;
    say("auto-approve off");
  } catch (e) {
    $("auto-off-result").textContent = `auto-approve off refused: ${e.message}`;
    say(`auto-approve off refused: ${e.message}`, true);
  }
}

// ---------------------------------------------------------------- start

// A refresh reads the header's state and the open view only; each request is bounded
// (roll-ups and limited lists), whatever the number of turns.
async function refresh() {
  const results = [...await Promise.allSettled([loadFlags()]), ...await loadView()];
  const failed = results.filter((r) => r.status === "rejected");
  if (failed.length) say(failed[0].reason.message, true);
  document.body.setAttribute("data-loaded", "1");
}

// who the credential makes the operator: every write is that person's
async function loadSession() {
  const s = await api("/api/session");
  $("env-badge").textContent = s.env;
  const op = s.operator;
  $("operator-badge").textContent = op ? `${op.person} · ${op.org}${op.platform ? " · platform" : ""}` : "no operator";
  $("operator-badge").setAttribute("data-person", op ? op.person : "");
  state.tz = s.timezone || state.tz;
}

async function start() {
  try { await loadSession(); } catch (e) { say(e.message, true); }
  $("tz-badge").textContent = `times in ${state.tz}`;
  show(location.hash.slice(1));
  window.addEventListener("hashchange", () => { show(location.hash.slice(1)); loadView(); });
  $("admin-token").value = state.token;
  $("token-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    state.token = $("admin-token").value.trim();
    sessionStorage.setItem("charterAdminToken", state.token);
    say("credential set");
    loadSession().catch((e) => say(e.message, true));
    refresh();
  });
  $("turn-filters").addEventListener("submit", (ev) => { ev.preventDefault(); loadTurns().catch((e) => say(e.message, true)); });
  for (const id of ["btn-stop", "btn-pause", "btn-resume"]) {
    $(id).addEventListener("click", () => control($(id).getAttribute("data-action")));
  }
  $("btn-auto-off").addEventListener("click", () => autoOff());
  $("memory-org-form").addEventListener("submit", (ev) => { ev.preventDefault(); loadMemory().catch((e) => say(e.message, true)); });
  $("memory-add-form").addEventListener("submit", (ev) => { ev.preventDefault(); addMemory(); });
  $("memory-table").addEventListener("click", (ev) => {
    const id = ev.target.getAttribute && ev.target.getAttribute("data-delete");
    if (id) deleteMemory(id);
  });
  $("btn-replay").addEventListener("click", () => replayOpenTurn().catch((e) => say(e.message, true)));
  await refresh();
  const params = new URLSearchParams(location.search);
  if (params.get("turn")) openTrail(params.get("turn"), params.get("org")).catch((e) => say(e.message, true));
  setInterval(() => { if (!["trail", "controls", "memory", "ft"].includes(state.view)) refresh(); }, 15000);
}

document.addEventListener("DOMContentLoaded", start);
