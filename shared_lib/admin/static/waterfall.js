// A turn's span waterfall and its errors explained (issue 38): the view over
// /api/turns/<id>/waterfall and the trail's error guide. Loaded after app.js, whose helpers
// ($, el, api, fmt, kv) it uses. Bars are positioned through the CSSOM (el.style), which the
// page's Content-Security-Policy allows; every label is inserted as text.
"use strict";

function waterfallBar(b) {
  const bar = el("div", { class: `wf-bar wf-${b.kind}` });
  bar.style.left = `${b.left_pct}%`;
  bar.style.width = `max(${b.width_pct}%, 2px)`;
  const row = el("div", { class: `wf-row${b.status === "ERROR" ? " wf-error" : ""}`, "data-kind": b.kind,
                          "data-span-id": b.span_id, "data-offset-ms": b.offset_ms, "data-duration-ms": b.duration_ms,
                          title: `${b.label} · +${fmt.ms(b.offset_ms)} · ${fmt.ms(b.duration_ms)}${b.service ? " · " + b.service : ""}` },
    el("span", { class: "wf-label" }, "\u00a0".repeat(2 * Math.min(b.depth, 8)), b.label),
    el("span", { class: "wf-track" }, bar),
    el("span", { class: "wf-ms" }, fmt.ms(b.duration_ms)));
  return row;
}

function renderWaterfall(d) {
  if (d.cloud_trace_url) {
    return el("p", { class: "muted" }, `spans are in Cloud Trace: ${d.cloud_trace_url}`);
  }
  if (!d.bars.length) return el("p", { class: "muted" }, d.trace_id ? "no spans recorded for this trace" : "the record has no trace id");
  const t = d.totals;
  const share = (ms) => `${fmt.ms(ms)} (${Math.round((100 * ms) / (d.total_ms || 1))} %)`;
  const legend = el("div", { class: "wf-legend" }, ...Object.entries(d.legend).filter(([k]) => t[k] > 0)
    .map(([k, name]) => el("span", { class: "wf-key", "data-kind": k }, el("i", { class: `wf-swatch wf-${k}` }), name)));
  return el("div", { id: "waterfall", class: "waterfall", "data-total-ms": d.total_ms },
    el("p", { class: "wf-summary" }, `total ${fmt.ms(d.total_ms)} · 待ち queue ${share(t.queue)} · ` +
      `LLM ${share(t.llm)} · ツール tools ${share(t.tool)} · trace ${d.trace_id}`),
    legend,
    el("div", { class: "wf-rows" }, ...d.bars.map(waterfallBar)));
}

async function loadWaterfall(turnId, org) {
  const box = $("waterfall-body");
  box.replaceChildren(el("p", { class: "muted" }, "…"));
  const q = org ? `?org=${encodeURIComponent(org)}` : "";
  try {
    box.replaceChildren(renderWaterfall(await api(`/api/turns/${encodeURIComponent(turnId)}/waterfall${q}`)));
  } catch (e) {
    box.replaceChildren(el("p", { class: "message error" }, e.message));
  }
}

// the record's errors and failed tools: the code, what it means and the runbook's line
function explainedErrors(data) {
  const guide = data.error_guide || {};
  const r = data.record;
  const items = [...r.errors.map((e) => [e.code, `${e.layer}, ${e.severity}`]),
    ...r.execution_result.filter((x) => x.error_code).map((x) => [x.error_code, `tool ${x.tool_name}`])];
  if (!items.length) return "–";
  return el("ul", { class: "errors-explained" }, ...items.map(([code, where]) => {
    const g = guide[code] || { meaning: "", runbook: "" };
    return el("li", { "data-code": code }, el("strong", {}, code), ` (${where}): `,
      el("span", { class: "err-meaning" }, g.meaning), el("br"),
      el("span", { class: "err-runbook" }, `runbook: ${g.runbook}`));
  }));
}
