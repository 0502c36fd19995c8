"use strict";
// The report's only script: unpacks the embedded rows and views (gzip,
// base64) with the browser's own DecompressionStream, renders the task
// table (sort, filter, show more), opens a task's rubrics beside the view
// the judges read. Every value from the data goes in as text (textContent),
// never as HTML; the only HTML inserted is the view, which redjury built
// and escaped. No network: nothing here loads anything.

const errors = [];
window.addEventListener("error", (e) => { errors.push(String(e.message)); document.body.dataset.errors = errors.join(" | "); });
window.addEventListener("unhandledrejection", (e) => { errors.push(String(e.reason)); document.body.dataset.errors = errors.join(" | "); });

async function unpack(b64) {
  const bin = atob(b64);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return await new Response(stream).text();
}

// Bidirectional formatting characters can make one id read as another
// (a task name reversed on screen): they are shown as their code points.
function readable(v) {
  return typeof v === "string"
    ? v.replace(/[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, (c) => "\u27e6U+" + c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0") + "\u27e7")
    : v;
}

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else if (k === "text") e.textContent = readable(v); else e.setAttribute(k, v);
  }
  for (const c of children) e.append(typeof c === "string" ? readable(c) : c);
  return e;
}

const state = { rows: [], views: {}, shown: 0, sort: { key: null, dir: 1 }, page: 500 };

function matches(r, filter, text) {
  if (filter === "split" && !r.split) return false;
  if (filter === "incomplete" && r.status !== "incomplete") return false;
  if (filter === "gate_failed" && r.status !== "gate_failed") return false;
  if (filter === "scored" && r.status !== "scored") return false;
  if (text) {
    const hay = (r.task + " " + r.trial + " " + r.group + " " + (r.reason || "") + " " + (r.gate || "")).toLowerCase();
    if (!hay.includes(text)) return false;
  }
  return true;
}

function visible() {
  const filter = document.getElementById("filter").value;
  const text = document.getElementById("search").value.trim().toLowerCase();
  let rows = state.rows.filter((r) => matches(r, filter, text));
  const { key, dir } = state.sort;
  if (key) {
    rows = rows.slice().sort((a, b) => {
      const x = a[key], y = b[key];
      if (x === y) return 0;
      if (x === null || x === undefined) return 1;
      if (y === null || y === undefined) return -1;
      return (x < y ? -1 : 1) * dir;
    });
  }
  return rows;
}

function fmt(v) { return v === null || v === undefined ? "—" : Number(v).toFixed(4); }

function renderTable(reset) {
  const rows = visible();
  const body = document.querySelector("#tasks-table tbody");
  if (reset) { body.textContent = ""; state.shown = 0; }
  const end = Math.min(rows.length, state.shown + state.page);
  const frag = document.createDocumentFragment();
  for (let i = state.shown; i < end; i++) {
    const r = rows[i];
    const tr = el("tr", { tabindex: "0", "data-index": String(r.i) },
      el("td", { text: r.task }), el("td", { text: r.trial }), el("td", { text: r.scenario }),
      el("td", { class: "num", text: String(r.turn) }), el("td", { text: r.side }), el("td", { text: r.group }),
      el("td", { class: "status-" + r.status, text: r.status.replace("_", " ") + (r.split ? " · split" : "") }),
      el("td", { class: "num", text: fmt(r.reward) }));
    tr.addEventListener("click", () => openTask(r.i));
    tr.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); openTask(r.i); } });
    frag.append(tr);
  }
  body.append(frag);
  state.shown = end;
  document.getElementById("count").textContent = rows.length + " of " + state.rows.length + " rows" + (end < rows.length ? " (" + end + " shown)" : "");
  document.getElementById("more").hidden = end >= rows.length;
  if (!document.body.dataset.renderedMs) document.body.dataset.renderedMs = String(Math.round(performance.now()));
}

// A penalty item's PASS means the undesirable edit is there: it is shown
// as bad, and its FAIL as good.
function verdictCell(v, penalty) {
  const cls = v ? "v-" + v + (penalty ? " penalty" : "") : "muted";
  const cell = el("td", { class: cls, text: v || "—" });
  if (penalty && v) cell.title = v === "PASS" ? "penalty triggered: the undesirable edit is present" : "penalty not triggered";
  return cell;
}

async function openTask(i) {
  const r = state.rows[i];
  const detail = document.getElementById("detail");
  detail.hidden = false;
  detail.querySelector("h3").textContent = readable(r.task + " · trial " + r.trial + " · " + r.status.replace("_", " ") + " · reward " + fmt(r.reward));
  const info = detail.querySelector(".info");
  info.textContent = readable((r.gate ? "Gate: " + r.gate + ". " : "") + (r.reason ? "Why: " + r.reason : ""));
  const judges = state.judges;
  const head = el("tr", {}, el("th", { text: "rubric" }), el("th", { class: "num", text: "weight" }), el("th", { text: "category" }), el("th", { text: "panel" }),
    ...judges.map((j) => el("th", { text: j })), el("th", { text: "justifications and abstentions" }));
  const table = el("table", { class: "rubrics" }, el("thead", {}, head));
  const tbody = el("tbody", {});
  for (const x of r.rubrics) {
    const notes = el("td", { class: "just" });
    for (const j of Object.keys(x.just || {})) notes.append(el("div", { text: j + ": " + x.just[j] }));
    for (const j of Object.keys(x.abst || {})) notes.append(el("div", { text: j + " abstained: " + x.abst[j] }));
    tbody.append(el("tr", {}, el("td", { text: x.id + (x.kind === "check" ? " (check)" : "") + (x.req ? " (required)" : "") }), el("td", { class: "num", text: String(x.w) }),
      el("td", { text: x.cat }), verdictCell(x.v, x.w < 0), ...judges.map((j) => verdictCell(x.kind === "check" ? (x.votes || {}).check : (x.votes || {})[j], x.w < 0)), notes));
  }
  table.append(tbody);
  const rubrics = detail.querySelector(".rubrics-box");
  rubrics.textContent = "";
  rubrics.append(table);
  const view = detail.querySelector(".view-box");
  const packed = state.views[r.k];
  if (packed) {
    view.innerHTML = await unpack(packed);
  } else {
    view.textContent = "The view this row's judges read is not embedded in this report (the run wrote no views, or the --html-views-mb budget was spent on rows that matter more): it is views/" + r.k + ".md in the results folder.";
  }
  detail.querySelector("button.close").focus();
  detail.scrollIntoView();
}

function setupSorting() {
  for (const th of document.querySelectorAll("#tasks-table th[data-key]")) {
    const button = th.querySelector("button");
    button.addEventListener("click", () => {
      const key = th.dataset.key;
      state.sort.dir = state.sort.key === key ? -state.sort.dir : 1;
      state.sort.key = key;
      for (const other of document.querySelectorAll("#tasks-table th[data-key]")) other.setAttribute("aria-sort", "none");
      th.setAttribute("aria-sort", state.sort.dir > 0 ? "ascending" : "descending");
      renderTable(true);
    });
  }
}

async function selftest() {
  const problems = [];
  const filter = document.getElementById("filter");
  filter.value = "gate_failed";
  filter.dispatchEvent(new Event("change"));
  const failed = state.rows.filter((r) => r.status === "gate_failed").length;
  const shown = document.querySelectorAll("#tasks-table tbody tr").length;
  if (shown !== Math.min(failed, state.page)) problems.push("filter showed " + shown + " of " + failed + " gate failures");
  filter.value = "all";
  filter.dispatchEvent(new Event("change"));
  const first = document.querySelector("#tasks-table tbody tr");
  if (!first) problems.push("no rows");
  else {
    const i = Number(first.dataset.index);
    await openTask(i);
    const d = document.getElementById("detail");
    if (d.hidden) problems.push("the task did not open");
    if (d.querySelectorAll(".rubrics tbody tr").length !== state.rows[i].rubrics.length) problems.push("rubric table incomplete");
    if (state.views[state.rows[i].k] && !d.querySelector(".view-box .doc")) problems.push("view not rendered");
  }
  if (errors.length) problems.push("script errors: " + errors.join(" | "));
  document.body.dataset.selftest = problems.length ? "fail: " + problems.join("; ") : "pass";
}

async function main() {
  const data = document.getElementById("rows-data");
  if (!data) return;
  state.rows = JSON.parse(await unpack(data.textContent.trim()));
  state.rows.forEach((r, i) => { r.i = i; });
  state.judges = JSON.parse(document.getElementById("judges-data").textContent);
  const views = document.getElementById("views-data");
  state.views = views ? JSON.parse(views.textContent) : {};
  document.getElementById("filter").addEventListener("change", () => renderTable(true));
  document.getElementById("search").addEventListener("input", () => renderTable(true));
  document.getElementById("more").addEventListener("click", () => renderTable(false));
  document.querySelector("#detail button.close").addEventListener("click", () => { document.getElementById("detail").hidden = true; });
  document.addEventListener("keydown", (e) => { if (e.key === "Escape") document.getElementById("detail").hidden = true; });
  setupSorting();
  renderTable(true);
  if (location.hash === "#selftest") await selftest();
}

main();
