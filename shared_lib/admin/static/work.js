// The dashboard's delegated jobs and fine-tuning review (issue 22): the views over /api/jobs and
// /api/ft. Loaded after app.js, whose helpers ($, el, api, say, fmt) and view switch it uses.
"use strict";

async function loadJobs() {
  const org = $("jobs-org").value.trim(), status = $("jobs-status").value;
  const q = new URLSearchParams();
  if (org) q.set("org", org);
  if (status) q.set("status", status);
  const d = await api(`/api/jobs?${q}`);
  const live = (j) => ["queued", "running"].includes(j.status);
  $("jobs-table").querySelector("tbody").replaceChildren(...d.jobs.map((j) => el("tr", { "data-id": j.job_id },
    el("td", {}, j.job_id), el("td", {}, j.org_id || ""), el("td", {}, j.status), el("td", {}, j.reason || ""),
    el("td", {}, `${j.steps ?? 0}/${j.max_steps ?? "?"}`), el("td", {}, fmt.num(j.cost_usd || 0, 4)),
    el("td", {}, j.user_id || ""), el("td", {}, j.task || ""), el("td", {}, fmt.time(j.created_at)),
    el("td", {}, live(j) ? el("button", { type: "button", "data-cancel": j.job_id, "data-org": j.org_id }, "cancel") : ""))));
}

async function cancelJob(id, org) {
  try {  // cancelled by the operator's own person
    await api(`/api/jobs/${encodeURIComponent(id)}/cancel`, {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ org }) });
    say(`cancelled ${id}`);
    await loadJobs();
  } catch (e) { say(`refused: ${e.message}`, true); }
}

async function loadFt() {
  const org = $("ft-org").value.trim(), status = $("ft-status").value;
  const body = $("ft-table").querySelector("tbody");
  if (!org) { body.replaceChildren(); return; }
  const d = await api(`/api/ft?org=${encodeURIComponent(org)}` + (status ? `&status=${status}` : ""));
  body.replaceChildren(...d.candidates.map((c) => {
    const target = (c.target || {}).reply || "";
    return el("tr", { "data-id": c.id },
      el("td", {}, c.id), el("td", {}, c.kind || ""), el("td", {}, c.status || ""), el("td", {}, c.held_out ? "yes" : ""),
      el("td", {}, (c.source || {}).tool || "-"), el("td", {}, (c.input || {}).user || ""), el("td", {}, target),
      el("td", {}, ...(c.status === "pending" ? [
        el("button", { type: "button", "data-ft": "accept", "data-id": c.id }, "accept"),
        el("button", { type: "button", "data-ft": "edit", "data-id": c.id }, "edit"),
        el("button", { type: "button", "data-ft": "reject", "data-id": c.id }, "reject")] : [])));
  }));
}

async function reviewFt(action, id) {
  const org = $("ft-org").value.trim();  // the reviewer is the operator's person (level 6)
  if (!org) { say("an organisation is required", true); return; }
  const payload = { org, id };
  if (action === "edit") payload.reply = $("ft-text").value.trim();
  if (action === "reject") payload.reason = $("ft-text").value.trim();
  if (action !== "accept" && !$("ft-text").value.trim()) {
    say(action === "edit" ? "write the reply it should have given" : "write the reason", true);
    return;
  }
  try {
    await api(`/api/ft/${action}`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(payload) });
    say(`${action}: ${id}`);
    await loadFt();
  } catch (e) { say(`refused: ${e.message}`, true); }
}

document.addEventListener("DOMContentLoaded", () => {
  $("jobs-form").addEventListener("submit", (ev) => { ev.preventDefault(); loadJobs().catch((e) => say(e.message, true)); });
  $("jobs-table").addEventListener("click", (ev) => {
    const id = ev.target.getAttribute && ev.target.getAttribute("data-cancel");
    if (id) cancelJob(id, ev.target.getAttribute("data-org"));
  });
  $("ft-form").addEventListener("submit", (ev) => { ev.preventDefault(); loadFt().catch((e) => say(e.message, true)); });
  $("ft-table").addEventListener("click", (ev) => {
    const action = ev.target.getAttribute && ev.target.getAttribute("data-ft");
    if (action) reviewFt(action, ev.target.getAttribute("data-id"));
  });
});
