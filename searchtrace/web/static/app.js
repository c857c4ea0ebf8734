// searchtrace explorer: draws every view from the JSON API. Data from the store is only ever set as text
// (textContent / attribute values), never parsed as HTML, so nothing a fetched page contains can run.
"use strict";

// the words and colours the page draws with, read once from /api/vocabulary (the one definition, analytics' read
// model), never copied here: the partition's cells in order, each {name, meaning, colour}; what the rows behind each
// count are called (counts), the complementarity classes (classes), the human audit labels (audit_labels), a
// verdict's label chips (verdict) and the report view's rows after the table's (extra_rows)
let V = null, CELLS = [], PARTS = [];
async function loadVocabulary() {
  if (V) return;
  V = await api("/api/vocabulary");
  CELLS = V.partition;
  PARTS = CELLS.map((c) => c.name);
}
// the fifth cell (docs/how-to/hosted.md) only where some item has it, so a store without hosted search shows four
const partsOf = (part) => PARTS.filter((p) => p !== "UNOBSERVED" || (part && part[p]));
const BYS = ["provider", "run", "model", "prompt"];
const SCOPE = ["run", "by", "judge_run_id"]; // kept across navigation: every link carries them
const PAGE = 50;
const TURNS_PER_PAGE = 20; // a trajectory's timeline shows this many model turns at a time
const RESULTS_SHOWN = 3; // results past this rank are folded
const main = () => document.getElementById("main");

// -- tiny DOM helpers ------------------------------------------------------------------------------
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") el.className = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}
const rate = (v) => v === null || v === undefined ? "–" : Math.abs(v) >= 100 ? v.toLocaleString("en", { maximumFractionDigits: 1 }) : v.toFixed(3);
const fmt = (v) => v === null || v === undefined ? "–" : typeof v === "boolean" ? String(v) : typeof v === "number" ? (Number.isInteger(v) ? v.toLocaleString("en") : Math.abs(v) >= 100 ? v.toLocaleString("en", { maximumFractionDigits: 1 }) : v.toFixed(3)) : String(v);
const usd = (v) => v === null || v === undefined ? "–" : `$${Number(v).toPrecision(4)}`;
// text on a cell's colour: dark on a light colour, white on a dark one (relative luminance, WCAG)
function ink(hex) {
  const lin = (i) => { const c = parseInt(hex.slice(i, i + 2), 16) / 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
  return 0.2126 * lin(1) + 0.7152 * lin(3) + 0.0722 * lin(5) > 0.179 ? "#1f2328" : "#fff";
}
function badge(part) {
  const cell = CELLS.find((c) => c.name === part);
  const el = h("span", { class: "badge", "data-part": part, title: cell ? cell.meaning : null, "data-testid": "badge" }, part);
  if (cell) { el.style.background = cell.colour; el.style.color = ink(cell.colour); }
  return el;
}
const chip = (text, cls, title) => h("span", { class: `chip ${cls || ""}`, title: title || null }, text);
const short = (v) => Math.abs(v) >= 10000 ? `${(v / 1000).toFixed(0)}k` : Math.abs(v) >= 1000 ? `${(v / 1000).toFixed(1)}k` : Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(3);
const interval = (ci) => !Array.isArray(ci) || ci.length !== 2 ? null : `${ci[0] < 0 ? "[" : ""}${short(ci[0])}${ci[0] < 0 ? ", " : "–"}${ci[1] === null ? "∞" : short(ci[1])}${ci[0] < 0 ? "]" : ""}`;
const pval = (p) => p === null || p === undefined ? "–" : Number(p).toPrecision(3);

async function api(path, opts) {
  const res = await fetch(path, opts);
  const body = await res.json();
  if (!res.ok) throw new Error(body.error || `HTTP ${res.status}`);
  return body;
}
function showError(err) {
  main().replaceChildren(h("p", { class: "error", role: "alert" }, String(err.message || err)));
}
function parseHash() {
  const raw = location.hash.replace(/^#/, "") || "/";
  const i = raw.indexOf("?");
  const path = i < 0 ? raw : raw.slice(0, i), query = i < 0 ? "" : raw.slice(i + 1);
  return { parts: path.split("/").filter(Boolean).map(decodeURIComponent), params: new URLSearchParams(query) };
}
// the scope (runs, by, judge run) of the page shown now
function scope() {
  const p = parseHash().params;
  return { run: p.getAll("run").filter(Boolean), by: p.get("by") || "", judge_run_id: p.get("judge_run_id") || "" };
}
// a hash link that keeps the scope: `params` may override it (a list value repeats the key)
function href(path, params, keep = true) {
  const q = new URLSearchParams();
  const all = { ...(keep ? scope() : {}), ...(params || {}) };
  for (const [k, v] of Object.entries(all)) {
    if (Array.isArray(v)) v.filter((x) => x !== "" && x !== null && x !== undefined).forEach((x) => q.append(k, x));
    else if (v !== null && v !== undefined && v !== "") q.set(k, v);
  }
  if (all.by === "provider") q.delete("by");
  const s = q.toString();
  return `#${path}${s ? "?" + s : ""}`;
}
function go(path, params, keep = true) { location.hash = href(path, params, keep); }
// the API query of the scope (and more)
function apiQuery(params) {
  const q = new URLSearchParams();
  const s = scope();
  s.run.forEach((r) => q.append("run", r));
  if (s.by) q.set("by", s.by);
  if (s.judge_run_id) q.set("judge_run_id", s.judge_run_id);
  for (const [k, v] of Object.entries(params || {})) if (v !== null && v !== undefined && v !== "") q.set(k, v);
  return q.toString();
}
const tlink = (id, text) => h("a", { href: href(`/t/${encodeURIComponent(id)}`), "data-testid": "trajectory-link" }, text || id);
const qlink = (qid, text) => h("a", { href: href(`/q/${encodeURIComponent(qid)}`), "data-testid": "question-link" }, text || qid);
function pager(offset, limit, total, onto) {
  return h("div", { class: "pager" },
    h("button", { disabled: offset <= 0, onclick: () => onto(Math.max(0, offset - limit)) }, "← previous"),
    ` ${total ? offset + 1 : 0}–${Math.min(offset + limit, total)} of ${fmt(total)} `,
    h("button", { disabled: offset + limit >= total, "data-testid": "next-page", onclick: () => onto(offset + limit) }, "next →"));
}

// -- the scope bar: judge run, runs, arms (on every page) -----------------------------------------
// which judge run "default" means, and why (docs/how-to/judge-runs.md): never a surprise
function defaultJudgeRun(runs) {
  const d = runs.find((j) => j.default);
  if (!d) return runs.length ? "judge run: none has a valid verdict" : "no judge run";
  const why = d.chosen_by === "judge --default" ? "made the default with judge --default" : "the first judge run";
  return `judge run: ${d.judge_run_id} (default: ${why}${runs.length > 1 ? `; ${runs.length - 1} other(s) to choose from` : ""})`;
}
let judgeRuns = null, allRuns = null;
async function scopeBar() {
  judgeRuns = judgeRuns || await api("/api/judge-runs");
  allRuns = allRuns || (await api("/api/runs")).filter((r) => r.trajectories > 0).map((r) => r.run_id);
  const s = scope();
  const { parts, params } = parseHash();
  const path = "/" + parts.map(encodeURIComponent).join("/");
  const here = Object.fromEntries([...params.keys()].filter((k) => !SCOPE.includes(k)).map((k) => [k, params.get(k)]));
  delete here.offset;
  const onto = (over) => go(path, { ...here, run: s.run, by: s.by, judge_run_id: s.judge_run_id, ...over }, false);
  const jr = h("select", { "aria-label": "judge run", "data-testid": "judge-run", onchange: (e) => onto({ judge_run_id: e.target.value }) },
    h("option", { value: "", "data-testid": "judge-run-default" }, defaultJudgeRun(judgeRuns)),
    judgeRuns.map((j) => h("option", { value: j.judge_run_id, selected: j.judge_run_id === s.judge_run_id },
      `${j.judge_run_id} (${j.model || "?"}, ${fmt(j.valid)} valid)${j.default ? " ·default" : ""}`)));
  const boxes = allRuns.map((r) => h("label", { class: "run" },
    h("input", { type: "checkbox", value: r, checked: s.run.includes(r), "data-testid": "run-choice" }), ` ${r}`));
  const runs = h("details", { class: "runs", "data-testid": "runs" },
    h("summary", {}, s.run.length ? `runs: ${s.run.length === 1 ? s.run[0] : s.run.length + " chosen"}` : allRuns.length > 1 ? `runs: all ${allRuns.length}` : "run"),
    h("div", { class: "runlist" }, boxes,
      h("button", { "data-testid": "runs-apply", onclick: () => onto({ run: boxes.map((b) => b.querySelector("input")).filter((i) => i.checked).map((i) => i.value) }) }, "apply")));
  const choices = BYS.includes(s.by || "provider") ? BYS : [...BYS, s.by];
  const by = h("select", { "aria-label": "compare by", "data-testid": "by", onchange: (e) => onto({ by: e.target.value }) },
    choices.map((b) => h("option", { value: b, selected: b === (s.by || "provider") }, `by ${b}`)));
  return h("div", { class: "scope", "data-testid": "scope" }, jr, runs, by);
}

// -- trajectory list -------------------------------------------------------------------------------
async function viewTrajectories(params) {
  const own = Object.fromEntries([...params.keys()].filter((k) => !SCOPE.includes(k)).map((k) => [k, params.get(k)]));
  const data = await api(`/api/trajectories?${apiQuery({ limit: PAGE, ...own })}`);
  const set = (k) => (e) => go("/", { ...own, [k]: e.target.value, offset: 0 });
  const select = (k, label, values, names) => h("label", {}, `${label} `,
    h("select", { "aria-label": label, "data-testid": `filter-${k}`, onchange: set(k) },
      h("option", { value: "" }, "all"),
      values.map((v, i) => h("option", { value: v, selected: String(v) === (own[k] || "") }, names ? names[i] : v))));
  const search = h("input", { type: "search", placeholder: "question, qid, answer…", value: own.q || "", "aria-label": "search", "data-testid": "filter-q" });
  search.addEventListener("change", set("q"));
  const c = data.counts;
  const bar = h("div", { class: "filters" },
    select("provider", "provider", data.facets.providers),
    select("epoch", "epoch", data.facets.epochs),
    select("correct", "correct", ["true", "false", "unaudited"], ["correct", "incorrect", "unaudited"]),
    select("partition", "has item", PARTS),
    search);
  const arms = scope().by === "run" ? c.runs : c.providers;
  const counts = h("div", { class: "counts", "data-testid": "counts" },
    h("strong", { "data-testid": "total" }, `${fmt(data.total)} trajectories`),
    Object.entries(arms).map(([p, n]) => chip(`${p} ${fmt(n)}`)),
    Object.entries(c.correct).map(([k, n]) => chip(`${k === "true" ? "correct" : k === "false" ? "incorrect" : k} ${fmt(n)}`, `c-${k}`)),
    partsOf(c.partition).map((p) => h("span", { class: "pcount" }, badge(p), ` ${fmt(c.partition[p])}`)));
  const offset = Number(own.offset || 0);
  main().replaceChildren(h("h1", {}, "Trajectories"), await scopeBar(), bar, counts,
    trajectoryTable(data.trajectories), pager(offset, PAGE, data.total, (o) => go("/", { ...own, offset: o })));
}

function trajectoryTable(rows) {
  return h("div", { class: "wide" }, h("table", { class: "list" },
    h("thead", {}, h("tr", {}, ["provider", "question", "final answer", "audit", "searches", "fetches", "tokens", "items"].map((x) => h("th", {}, x)))),
    h("tbody", {}, rows.map((t) => h("tr", { "data-testid": "trajectory-row" },
      h("td", {}, tlink(t.trajectory_id, t.provider)),
      h("td", { class: "q" }, qlink(t.qid, t.question || t.qid)),
      h("td", {}, t.final_answer === null ? h("span", { class: "muted" }, t.finish_reason || "running") : t.final_answer),
      h("td", {}, t.correct === null ? chip("unaudited", "c-unaudited") : chip(t.correct ? "correct" : "incorrect", `c-${t.correct}`)),
      h("td", { class: "num" }, fmt(t.searches)), h("td", { class: "num" }, fmt(t.fetches)),
      h("td", { class: "num" }, fmt(t.input_tokens + t.output_tokens)),
      h("td", { class: "parts" }, PARTS.filter((p) => t.partition[p]).map((p) => h("span", { class: "pcount" }, badge(p), ` ${t.partition[p]}`))))))));
}

// -- one trajectory as a timeline --------------------------------------------------------------------
function labelChips(item) {
  if (!item || item.valid === null || item.valid === undefined) return [chip("no verdict", "muted")];
  if (!item.valid) return [chip("invalid verdict", "bad", item.invalid_reason)];
  const out = [];
  const yes = (key, cls, title) => { if (item[key]) out.push(chip(V.verdict[key], cls, title)); };
  yes("snippet_supports_gold", "good");
  yes("snippet_contradicts_gold", "bad");
  yes("snippet_relevant");
  if (item.has_page) {
    yes("page_supports_gold", "good");
    yes("page_contradicts_gold", "bad");
    if (!item.page_supports_gold && !item.page_contradicts_gold) out.push(chip("page: no support", "muted"));
  }
  yes("supports_final_answer");
  yes("discovered", "good", "support found only after fetching");
  if (!out.length) out.push(chip("no support", "muted"));
  return out;
}

function resultRow(r, item, firstSeen) {
  const fetched = item && item.fetched;
  return h("li", { class: "result", "data-testid": "result" },
    h("div", { class: "rhead" },
      h("span", { class: "rank" }, `#${r.rank}`),
      item && item.part ? badge(item.part) : null,
      h("span", { class: "title" }, r.title || r.url),
      h("span", { class: "domain" }, r.domain),
      chip(fetched ? "fetched" : "not fetched", fetched ? "fetched" : "muted"),
      item && item.cited ? chip("cited", "good", "the final answer cites this item (docs/how-to/hosted.md)") : null,
      firstSeen ? null : chip("seen before", "muted", "its judge item is its first appearance")),
    h("div", { class: "url" }, r.url),
    h("div", { class: "snippet" }, r.snippet),
    h("div", { class: "labels", "data-testid": "labels" }, labelChips(item)),
    item && item.rationale ? h("div", { class: "rationale" }, h("b", {}, "judge: "), item.rationale) : null);
}

function pageBlock(page) {
  if (!page || page.text === null) return h("p", { class: "muted" }, "page not in the store");
  return h("details", { class: "page", "data-testid": "page" },
    h("summary", {}, `page (${fmt(page.n_bytes)} bytes${page.truncated ? ", shown in part" : ""})`),
    h("pre", { class: "pagetext" }, page.text));
}

// a request message as text: its role, then each string part (tool calls as name(arguments))
function messageText(m) {
  if (m === null || m === undefined) return "(message not in the store)";
  if (typeof m === "string") return m;
  const out = [];
  const walk = (c) => {
    if (c === null || c === undefined) return;
    if (typeof c === "string") out.push(c);
    else if (Array.isArray(c)) c.forEach(walk);
    else if (typeof c === "object") {
      if (typeof c.text === "string") out.push(c.text);
      else if (c.content !== undefined) walk(c.content);
      else if (c.output !== undefined) walk(c.output);
      else out.push(JSON.stringify(c));
    }
  };
  walk(m.content !== undefined ? m.content : m.output !== undefined ? m.output : m.text);
  for (const tc of m.tool_calls || []) {
    const fn = tc.function || tc;
    out.push(`→ ${fn.name}(${typeof fn.arguments === "string" ? fn.arguments : JSON.stringify(fn.arguments)})`);
  }
  if (m.type === "function_call") out.push(`→ ${m.name}(${m.arguments})`);
  return out.join("\n") || JSON.stringify(m);
}
const roleOf = (m) => m && typeof m === "object" ? (m.role || m.type || "message") : "message";
function messageBox(m) {
  return h("div", { class: `msg role-${roleOf(m)}`, "data-testid": "message" }, h("div", { class: "mrole" }, roleOf(m)),
    h("div", { class: "mbody" }, messageText(m)));
}

function resultsList(results, items, seen) {
  const rows = results.map((r) => {
    const row = resultRow(r, items[r.url_normalized], !seen.has(r.url_normalized));
    seen.add(r.url_normalized);
    return row;
  });
  const list = h("ol", { class: "results" }, rows.slice(0, RESULTS_SHOWN));
  if (rows.length > RESULTS_SHOWN) {
    list.append(h("li", {}, h("details", { class: "more", "data-testid": "more-results" },
      h("summary", {}, `${rows.length - RESULTS_SHOWN} more results (rank ${RESULTS_SHOWN + 1}+)`), h("ol", { class: "results" }, rows.slice(RESULTS_SHOWN)))));
  }
  return list;
}

async function viewTrajectory(id, params) {
  const t = await api(`/api/trajectories/${encodeURIComponent(id)}?${apiQuery()}`);
  const items = Object.fromEntries(t.items.map((i) => [i.url_normalized, i]));
  // the steps as recorded, grouped into turns: each model turn, then the tool calls it asked for
  const groups = [[]];
  const searches = {}, docItem = {};
  for (const s of t.steps) {
    const p = s.payload;
    if (s.type === "model.responded") groups.push([s]);
    else if (s.type === "search.result") { (searches[p.call_id] = searches[p.call_id] || []).push(p); docItem[p.doc_id] = p.url_normalized; continue; }
    else if (s.type === "search.completed" || s.type === "fetch.completed") { /* drawn with their call */ }
    if (!["search.result", "search.completed", "fetch.completed", "model.responded"].includes(s.type)) groups[groups.length - 1].push(s);
  }
  const completed = {};
  for (const s of t.steps) if (s.type === "search.completed" || s.type === "fetch.completed") completed[`${s.type}:${s.payload.call_id}:${s.payload.doc_id || ""}`] = s.payload;
  // what came before the first model turn is drawn with it
  const turns = (groups.length > 1 ? [[...groups[0], ...groups[1]], ...groups.slice(2)] : groups).filter((g) => g.length);
  const pages = Math.max(1, Math.ceil(turns.length / TURNS_PER_PAGE));
  const pageNo = Math.min(pages, Math.max(1, Number(params.get("page") || 1)));
  // what the model was sent: each turn's request messages; a turn shows the messages new since the turn before
  let prev = [];
  const sentBefore = new Map();
  for (const g of groups) {
    const s = g[0];
    if (s && s.type === "model.responded") {
      const list = s.payload.request_messages || null;
      if (list) {
        let keep = 0;
        while (keep < prev.length && keep < list.length && prev[keep] === list[keep]) keep++;
        sentBefore.set(s, list.slice(keep));
        prev = list;
      }
    }
  }
  const firstRequest = t.steps.find((s) => s.type === "model.responded" && s.payload.request_messages);
  const system = firstRequest ? firstRequest.payload.request_messages.map((d) => t.messages[d]).filter((m) => m && typeof m === "object" && ["system", "developer"].includes(m.role)) : [];
  const seen = new Set();
  // results seen before this page still count as seen
  for (const g of turns.slice(0, (pageNo - 1) * TURNS_PER_PAGE)) for (const s of g) if (s.type === "search.called") for (const r of searches[s.payload.call_id] || []) seen.add(r.url_normalized);
  const timeline = h("ol", { class: "timeline", "data-testid": "timeline" });
  for (const g of turns.slice((pageNo - 1) * TURNS_PER_PAGE, pageNo * TURNS_PER_PAGE)) {
    for (const s of g) {
      const p = s.payload;
      if (s.type === "model.responded") {
        const u = p.usage || {};
        const sent = (sentBefore.get(s) || []).map((d) => t.messages[d]).filter((m) => !(m && ["system", "developer"].includes(m.role)));
        timeline.append(h("li", { class: "step model", "data-testid": "turn" },
          sent.length ? h("details", { class: "sent", open: sent.length <= 3 }, h("summary", {}, `${sent.length} message${sent.length > 1 ? "s" : ""} sent to the model`), sent.map(messageBox)) : null,
          h("div", { class: "shead" }, h("b", {}, `model turn ${p.iteration}`),
            chip(`${fmt(u.input_tokens)} in / ${fmt(u.output_tokens)} out${u.reasoning_tokens ? ` / ${fmt(u.reasoning_tokens)} reasoning` : ""} tokens`),
            chip(`${fmt(p.latency_ms)} ms`), p.finish_reason ? chip(p.finish_reason, "muted") : null),
          p.text ? h("div", { class: "mtext" }, p.text) : null,
          (p.tool_calls || []).map((c) => h("div", { class: "toolcall" }, h("code", {}, `${c.name}(${c.arguments})`)))));
      } else if (s.type === "search.called") {
        const done = completed[`search.completed:${p.call_id}:`];
        timeline.append(h("li", { class: "step search", "data-testid": "search" },
          h("div", { class: "shead" }, h("b", {}, "search "), h("q", {}, p.query), " ",
            done ? [chip(done.status, done.status === "ok" ? "" : "bad"), chip(`${fmt(done.n_results)} results`), chip(`${fmt(done.latency_ms)} ms`)] : null),
          resultsList(searches[p.call_id] || [], items, seen)));
      } else if (s.type === "fetch.called") {
        const item = items[docItem[p.doc_id]];
        const done = completed[`fetch.completed:${p.call_id}:${p.doc_id || ""}`];
        timeline.append(h("li", { class: "step fetch", "data-testid": "fetch" },
          h("div", { class: "shead" }, h("b", {}, "fetch "), item && item.part ? badge(item.part) : null, h("span", { class: "url" }, p.url)),
          done ? h("div", {}, chip(done.status, done.status === "ok" ? "" : "bad"), chip(`${fmt(done.n_tokens)} tokens`),
            chip(`${fmt(done.latency_ms)} ms`), done.cache_hit ? chip("cache hit", "muted") : null) : null,
          done && done.content_digest ? pageBlock(t.pages[done.content_digest]) : null));
      } else if (s.type === "answer.final") {
        timeline.append(h("li", { class: "step answer" }, h("b", {}, "final answer: "), p.text));
      } else if (s.type === "trajectory.finished") {
        timeline.append(h("li", { class: "step end" }, h("b", {}, "finished: "), `${p.reason} after ${p.iterations} iterations`));
      } else if (s.type === "call.retried") {
        timeline.append(h("li", { class: "step retry" }, `retry ${p.what} (attempt ${p.attempt}, ${p.reason}, waited ${p.wait_s} s)`));
      } else if (s.type === "tool.refused") {
        timeline.append(h("li", { class: "step retry" }, `refused ${p.name}: ${p.reason}`));
      } else if (s.type !== "trajectory.started") {
        timeline.append(h("li", { class: "step muted" }, s.type));
      }
    }
  }
  const a = t.answer;
  const answer = h("section", { class: "answer", "data-testid": "answer" },
    h("div", {}, h("b", {}, "final answer: "), a.final === null ? h("span", { class: "muted" }, "none") : a.final),
    h("div", {}, h("b", {}, "gold: "), a.gold),
    h("div", {}, chip(`EM ${a.exact_match}`), chip(`F1 ${a.token_f1.toFixed(3)}`),
      a.semantic_match === null ? chip("unaudited", "c-unaudited") : chip(a.semantic_match ? "correct" : "incorrect", `c-${a.semantic_match}`),
      a.audit_source ? chip(`audit: ${a.audit_source}`, "muted") : null));
  const tools = Object.values(t.tools || {}).filter((x) => x !== null);
  const prompt = h("section", { class: "prompt", "data-testid": "system-prompt" },
    system.length ? h("details", { open: true }, h("summary", {}, "system prompt"), system.map(messageBox))
      : h("p", { class: "muted" }, firstRequest ? "no system message in the requests" : "the model's requests were not recorded (imported, or recorded before request messages were stored)"),
    tools.length ? h("details", {}, h("summary", {}, `tools offered (${tools.map((x) => Array.isArray(x) ? x.length : 1).reduce((x, y) => x + y, 0)})`),
      h("pre", { class: "pagetext" }, JSON.stringify(tools[tools.length - 1], null, 1))) : null);
  const turnPager = pages > 1 ? h("div", { class: "pager", "data-testid": "turn-pager" },
    h("button", { disabled: pageNo <= 1, onclick: () => go(`/t/${encodeURIComponent(id)}`, { page: pageNo - 1 }) }, "← earlier turns"),
    ` turns page ${pageNo} of ${pages} (${fmt(turns.length)} turns) `,
    h("button", { disabled: pageNo >= pages, "data-testid": "later-turns", onclick: () => go(`/t/${encodeURIComponent(id)}`, { page: pageNo + 1 }) }, "later turns →")) : null;
  main().replaceChildren(
    h("p", { class: "crumbs" }, h("a", { href: href("/") }, "Trajectories"), " / ", h("span", { class: "url" }, t.trajectory_id)),
    h("h1", {}, t.question),
    await scopeBar(),
    h("div", { class: "filters" }, chip(t.provider), chip(`qid ${t.qid}`), chip(`run ${t.run_id}`),
      qlink(t.qid, "this question across providers"),
      t.current ? null : chip("superseded attempt", "bad")),
    answer,
    h("div", { class: "counts" }, partsOf(t.partition).map((p) => h("span", { class: "pcount" }, badge(p), ` ${t.partition[p]}`)),
      chip(`${t.items.length} items`)),
    ...[prompt, turnPager, timeline, turnPager ? turnPager.cloneNode(true) : null].filter(Boolean));
  if (turnPager) { // the copy at the bottom needs its own handlers
    const bottom = main().lastChild;
    const [prevB, nextB] = bottom.querySelectorAll("button");
    prevB.addEventListener("click", () => go(`/t/${encodeURIComponent(id)}`, { page: pageNo - 1 }));
    nextB.addEventListener("click", () => go(`/t/${encodeURIComponent(id)}`, { page: pageNo + 1 }));
  }
}

// -- one question across trajectories, aligned by URL ---------------------------------------------
async function viewQuestion(qid) {
  const d = await api(`/api/questions/${encodeURIComponent(qid)}?${apiQuery()}`);
  const name = (t) => t.epoch > 1 ? `${t.provider} (epoch ${t.epoch})` : t.provider;
  const byId = Object.fromEntries(d.trajectories.map((t) => [t.trajectory_id, t]));
  const aligned = h("ol", { class: "aligned", "data-testid": "aligned" }, d.aligned.map((u) => h("li", { class: "urlrow", "data-testid": "aligned-url" },
    h("div", { class: "rhead" }, h("span", { class: "title" }, u.title || u.url), h("span", { class: "domain" }, u.domain),
      Object.keys(u.cells).length > 1 ? chip(`${Object.keys(u.cells).length} trajectories`, "shared") : null),
    h("div", { class: "url" }, u.url),
    h("ul", { class: "cells" }, Object.entries(u.cells).map(([tid, c]) => h("li", {},
      h("div", { class: "rhead" }, tlink(tid, name(byId[tid] || { provider: tid, epoch: 1 })), h("span", { class: "rank" }, `#${c.rank}`),
        c.appearances > 1 ? chip(`${c.appearances}×`, "muted", "appearances in this trajectory") : null,
        c.part ? badge(c.part) : null, c.item === false ? chip("not shown, not fetched", "muted") : chip(c.fetched ? "fetched" : "not fetched", c.fetched ? "fetched" : "muted")),
      c.item === false ? null : h("div", { class: "labels" }, labelChips(c)),
      c.rationale ? h("div", { class: "rationale" }, h("b", {}, "judge: "), c.rationale) : null))))));
  const cols = d.trajectories.map((t) => h("section", { class: "col", "data-testid": "provider-column" },
    h("h2", {}, tlink(t.trajectory_id, name(t))),
    h("div", {}, h("b", {}, "answer: "), t.final_answer === null ? h("span", { class: "muted" }, "none") : t.final_answer, " ",
      t.semantic_match === null ? chip("unaudited", "c-unaudited") : chip(t.semantic_match ? "correct" : "incorrect", `c-${t.semantic_match}`)),
    t.searches.map((s) => h("div", { class: "qsearch" }, h("div", { class: "shead" }, h("q", {}, s.query), " ", chip(s.status || "?")),
      h("ol", { class: "results" }, s.results.map((r) => h("li", { class: `result${(d.shared_urls[r.url_normalized] || []).length ? " shared" : ""}` },
        h("div", { class: "rhead" }, h("span", { class: "rank" }, `#${r.rank}`), r.part ? badge(r.part) : null,
          h("span", { class: "title" }, r.title || r.url), r.fetched ? chip("fetched", "fetched") : null))))))));
  main().replaceChildren(
    h("p", { class: "crumbs" }, h("a", { href: href("/") }, "Trajectories"), " / question ", qid),
    h("h1", {}, d.question), await scopeBar(), h("p", {}, h("b", {}, "gold: "), d.gold_answer, " ",
      chip(`${Object.keys(d.shared_urls).length} URLs shared between providers`, "shared")),
    h("h2", {}, "Every URL returned, aligned across trajectories"), aligned,
    h("h2", {}, "Each trajectory's searches"),
    h("div", { class: "cols", "data-testid": "side-by-side" }, cols));
}

// -- the report -----------------------------------------------------------------------------------
let layout = null;
const valueAt = (block, key) => key.split(".").reduce((v, k) => (v && typeof v === "object" ? v[k] : undefined), block);
const isCost = (key) => key.endsWith("_usd") || key.startsWith("usd_");

// a figure of the report that is no count (a rate, interval, p-value, time, cost, size): marked so, never a bare cell
const nc = (text, why) => h("span", { "data-not-count": why }, text);

function countCell(block, arm, key, show) {
  const v = valueAt(block, key);
  const link = layout.links[key];
  const count = layout.counts.includes(key);
  const text = show ? show(v) : count || typeof v !== "number" ? fmt(v) : rate(v);
  if (v === null || v === undefined) return nc(text, "no value");
  if (!link) return nc(text, isCost(key) ? "cost" : "figure");
  return h("a", { href: href("/items", { ...link, arm }), "data-testid": "count-link", "data-key": key, "data-arm": arm,
    "data-count": count ? v : null, title: count ? `the ${fmt(v)} behind this count` : "what this rate counts (its numerator)" }, text);
}

// a count of an arm pair (complementarity cells, the questions of the paired tests): a link to what it counts
function pairCell(pair, key, v, what) {
  const link = layout.pair_links[key];
  if (!link || v === null || v === undefined) return nc(fmt(v), "no value");
  return h("a", { href: href("/items", { ...link, pair }), "data-testid": "count-link", "data-key": `${what}.${key}`, "data-pair": pair,
    "data-count": v, title: `the ${fmt(v)} behind this count` }, fmt(v));
}

function chooser(runs) {
  const boxes = runs.map((r) => h("label", { class: "run" }, h("input", { type: "checkbox", value: r, "data-testid": "choose-run-box" }), ` ${r}`));
  const picked = () => boxes.map((b) => b.querySelector("input")).filter((i) => i.checked).map((i) => i.value);
  return h("section", { class: "chooser", "data-testid": "choose-run" },
    h("p", {}, `This store holds ${runs.length} runs. A report by provider covers one run (or several chosen together, never merged silently); by run, each run is an arm.`),
    h("div", { class: "runlist" }, boxes),
    h("div", { class: "filters" },
      h("button", { "data-testid": "report-runs", onclick: () => picked().length && go("/report", { run: picked(), by: "provider" }) }, "report the chosen runs"),
      h("button", { "data-testid": "compare-runs", onclick: () => go("/report", { run: picked().length ? picked() : runs, by: "run" }) }, "compare runs (by run)")),
    h("ul", {}, runs.map((r) => h("li", {}, h("a", { href: href("/report", { run: [r] }), "data-testid": "report-run" }, r)))));
}

async function viewReport() {
  layout = layout || await api("/api/report-links");
  const bar = await scopeBar();
  const rep = await api(`/api/report?${apiQuery()}`);
  if (rep.choose_run) { main().replaceChildren(h("h1", {}, "Report"), bar, chooser(rep.runs)); return; }
  const { notes } = await api(`/api/report-notes?${apiQuery()}`); // what `report` prints to stderr beside the table
  const arms = rep.arms && Object.keys(rep.arms).length ? rep.arms : rep.providers;
  const names = Object.keys(arms).sort();
  const priced = rep.prices_as_of !== undefined;
  const u = rep.uncertainty;
  const head = h("tr", {}, h("th", {}, "metric"), names.map((n) => h("th", {}, n)));
  const body = [];
  for (const [key, label] of layout.rows) {
    if (isCost(key) && !priced) continue;
    const show = isCost(key) ? usd : null;
    body.push(h("tr", {}, h("td", {}, label + (key === "search_usd" && priced ? ` (prices ${rep.prices_as_of})` : "")), names.map((n) => h("td", { class: "num" }, countCell(arms[n], n, key, show)))));
    if (names.some((n) => arms[n][`${key}_ci`] !== undefined)) {
      body.push(h("tr", { class: "ci" }, h("td", {}, "  95% interval"), names.map((n) => h("td", { class: "num" }, nc(interval(arms[n][`${key}_ci`]) || "–", "interval")))));
    }
  }
  for (const [key, label] of Object.entries(V.extra_rows)) {
    if (names.some((n) => arms[n][key] !== undefined)) body.push(h("tr", {}, h("td", {}, label), names.map((n) => h("td", { class: "num" }, countCell(arms[n], n, key)))));
  }
  const sections = [h("h2", {}, `Per ${rep.by || "provider"}`), h("div", { class: "wide" }, h("table", { class: "list report", "data-testid": "report-table" }, h("thead", {}, head), h("tbody", {}, body)))];
  // paired differences (docs/concepts/statistics.md): A − B over the questions both ran, with p and Holm's adjustment;
  // every column is the read model's (GET /api/report-links), so no metric is named here
  const comp = rep.paired || {};
  const cell = (p, col) => {
    const v = comp[p][col.key];
    if (col.shown === "count") return pairCell(p, col.key, v, "paired");
    if (col.shown === "interval") return nc(interval(v) || "–", "interval");
    if (col.shown === "p-value") return nc(pval(v), "p-value");
    if (col.shown === "test") return layout.tests[v] || v || "";
    return nc(fmt(v), "difference");
  };
  const pairTable = (columns, attrs) => {
    const first = columns.find((c) => c.shown === "difference").key;
    const pairs = Object.keys(comp).sort().filter((k) => comp[k][first] !== undefined);
    const holm = columns.some((c) => c.holm && pairs.some((p) => comp[p][c.key] !== undefined));
    const shown = columns.filter((c) => holm || !c.holm);
    const table = h("div", { class: "wide" }, h("table", { class: "list", ...attrs }, h("thead", {}, h("tr", {}, h("th", {}, "pair A|B"), shown.map((c) => h("th", {}, c.header)))),
      h("tbody", {}, pairs.map((p) => h("tr", {}, h("td", {}, p), shown.map((c) => h("td", c.shown === "test" ? {} : { class: "num" }, cell(p, c))))))));
    // what each Holm column adjusts over: the tests shown, named by the difference they test
    const families = [];
    let tested = "";
    for (const c of shown) {
      if (c.shown === "difference") tested = c.header.replace(/^Δ /, "");
      if (c.holm) families.push(`${pairs.filter((p) => comp[p][c.key] !== undefined && comp[p][c.key] !== null).length} ${tested}`);
    }
    return { pairs, holm, families, table };
  };
  const paired = pairTable(layout.paired, { "data-testid": "paired" });
  if (paired.pairs.length) {
    sections.push(h("h2", {}, "Paired differences (A − B, per question)"),
      h("p", { class: "muted" }, `n: questions audited on both sides.${paired.holm ? ` Holm over the ${paired.families.join(" and ")} tests shown.` : ""}`), paired.table);
  }
  // judge-error correction (docs/concepts/statistics.md), when the judge run has human labels
  const fixed = names.filter((n) => arms[n][layout.corrected_marker] !== undefined);
  if (fixed.length) {
    const rows = [];
    for (const [key, label] of layout.corrected) {
      rows.push(h("tr", {}, h("td", {}, label), fixed.map((n) => h("td", { class: "num" }, countCell(arms[n], n, key)))));
      if (fixed.some((n) => arms[n][`${key}_ci`] !== undefined)) rows.push(h("tr", { class: "ci" }, h("td", {}, "  95% interval"), fixed.map((n) => h("td", { class: "num" }, nc(interval(arms[n][`${key}_ci`]) || "–", "interval")))));
    }
    sections.push(h("h2", {}, "Corrected for judge error"), h("p", { class: "muted" }, "Each snippet rate corrected by the human audit labels, stratum by stratum; TPR / TNR: the judge against the human labels."),
      h("div", { class: "wide" }, h("table", { class: "list", "data-testid": "corrected" }, h("thead", {}, h("tr", {}, h("th", {}, "metric"), fixed.map((n) => h("th", {}, n)))), h("tbody", {}, rows))));
    // n: every question both arms ran (what the corrected difference rests on), linked to them
    const corrected = pairTable(layout.corrected_paired, {});
    if (corrected.pairs.length) sections.push(corrected.table);
  }
  const compl = rep.complementarity || {};
  if (Object.keys(compl).length) {
    const cols = [...Object.keys(V.classes), "url_jaccard"];
    sections.push(h("h2", {}, "Complementarity"), h("div", { class: "wide" }, h("table", { class: "list" }, h("thead", {}, h("tr", {}, h("th", {}, "pair A|B"), cols.map((c) => h("th", {}, c)))),
      h("tbody", {}, Object.keys(compl).sort().map((k) => h("tr", {}, h("td", {}, k), cols.map((c) => h("td", { class: "num" }, c === "url_jaccard" ? nc(fmt(compl[k][c]), "rate") : pairCell(k, c, compl[k][c], "complementarity")))))))));
  }
  const note = u ? `95% intervals: proportions Wilson at the effective sample size; means and ratios bootstrap over questions, ${fmt(u.bootstrap)} replicates, seed ${u.seed}.` : "no intervals (bootstrap 0)";
  const q = apiQuery();
  main().replaceChildren(h("h1", {}, "Report"), bar,
    h("p", { class: "muted", "data-testid": "report-meta" }, `judge run ${rep.judge_run_id || "(none)"} · ${names.length} ${rep.by && rep.by !== "provider" ? "arms by " + rep.by : "providers"} · ${note} Every count links to what it counts.`),
    h("p", {}, h("a", { href: `/api/report${q ? "?" + q : ""}` }, "JSON"), " · ", h("a", { href: `/report.html${q ? "?" + q : ""}`, target: "_blank", rel: "noopener" }, "charts (the report --html page)")),
    notes.length ? h("ul", { class: "notes", "data-testid": "report-notes" }, notes.map((n) => h("li", {}, n))) : null,
    ...sections);
}

// -- the items behind one count -----------------------------------------------------------------------
// a human audit label beside the judge's value of the same label (the correction's counts)
const humanChips = (r) => [chip(`human: ${V.audit_labels[r.audit_label] || r.audit_label} ${r.human_value === "unclear" ? "unclear" : r.human_value ? "yes" : "no"}`, r.human_value === "unclear" ? "muted" : r.human_value === r.judge_value ? "good" : "bad"),
  chip(`judge: ${r.judge_value ? "yes" : "no"}`, "muted")];
// one side (arm) of a cell or a paired question: its trajectories there, with what the count asks of them
function pairSide(s, cells) {
  return h("div", { class: "side" }, h("b", {}, `${s.arm}: `),
    cells ? chip(s.answerable ? "surface-answerable" : "not answerable", s.answerable ? "good" : "muted")
      : chip(`${fmt(s.correct)} of ${fmt(s.audited)} audited correct`),
    s.trajectories.flatMap((t) => [" ", tlink(t.trajectory_id, `${t.provider}${t.epoch > 1 ? ` · epoch ${t.epoch}` : ""}${cells ? (t.answerable ? " ✓" : "") : t.correct === null ? " · unaudited" : t.correct ? " · correct" : " · incorrect"}`)]));
}
async function viewItems(params) {
  const own = Object.fromEntries([...params.keys()].filter((k) => !SCOPE.includes(k)).map((k) => [k, params.get(k)]));
  const d = await api(`/api/items?${apiQuery({ ...own, limit: PAGE })}`);
  const what = d.label === "partition" ? `${d.partition} items` : d.cell ? `cells ${V.classes[d.cell] || d.cell}` : (V.counts[d.label] || d.label);
  const title = `${fmt(d.total)} ${d.rank ? `rank-${d.rank} appearances of ` : ""}${what}${d.arm ? ` · ${d.by} ${d.arm}` : ""}${d.pair ? ` · ${d.by} ${d.a} (A) and ${d.b} (B)` : ""}`;
  let list;
  if (d.kind === "trajectories") list = trajectoryTable(d.rows);
  else if (d.kind === "cells" || d.kind === "questions") list = h("ol", { class: "itemlist", start: d.offset + 1 }, d.rows.map((r) => h("li", { class: "item", "data-testid": d.kind === "cells" ? "cell-row" : "question-row" },
    h("div", { class: "rhead" }, qlink(r.qid, r.qid), r.epoch > 1 ? chip(`epoch ${r.epoch}`) : null, r.class ? chip(V.classes[r.class] || r.class) : null),
    h("div", { class: "muted" }, r.question || ""),
    pairSide(r.a, d.kind === "cells"), pairSide(r.b, d.kind === "cells"))));
  else if (d.kind === "fetches") list = h("ol", { class: "itemlist", start: d.offset + 1 }, d.rows.map((r) => h("li", { class: "item", "data-testid": "item-row" },
    h("div", { class: "rhead" }, chip(r.status), r.cache_hit ? chip("cache hit", "muted") : null, h("span", { class: "domain" }, `${fmt(r.n_tokens)} tokens`)),
    h("div", { class: "url" }, r.url || r.doc_id),
    h("div", {}, tlink(r.trajectory_id, `${r.provider} · ${r.qid}${r.epoch > 1 ? ` · epoch ${r.epoch}` : ""}`)))));
  else list = h("ol", { class: "itemlist", start: d.offset + 1 }, d.rows.map((r) => h("li", { class: "item", "data-testid": "item-row" },
    h("div", { class: "rhead" }, r.rank !== undefined ? h("span", { class: "rank" }, `#${r.rank}`) : null, r.part ? badge(r.part) : null,
      h("span", { class: "title" }, r.title || r.url), h("span", { class: "domain" }, r.domain),
      d.kind === "results" ? chip(r.shown ? `shown (${r.shown_by})` : "not shown", r.shown ? "" : "muted") : chip(r.fetched ? "fetched" : "not fetched", r.fetched ? "fetched" : "muted")),
    h("div", { class: "url" }, r.url || r.url_normalized),
    h("div", {}, tlink(r.trajectory_id, `${r.provider} · ${r.qid}${r.epoch > 1 ? ` · epoch ${r.epoch}` : ""}`), " ", h("span", { class: "muted" }, r.question || "")),
    r.appearance ? h("div", { class: "muted" }, `appearance ${r.appearance.index} of ${r.appearance.of} at rank ${r.appearance.rank}${r.appearance.query ? ` · query “${r.appearance.query}”` : ""}`) : null,
    r.query && d.kind === "results" ? h("div", { class: "muted" }, `query “${r.query}”`) : null,
    d.kind === "results" ? null : h("div", { class: "labels" }, d.kind === "labels" ? [...humanChips(r), ...labelChips(r)] : labelChips(r)),
    r.rationale ? h("div", { class: "rationale" }, h("b", {}, "judge: "), r.rationale) : null)));
  main().replaceChildren(h("p", { class: "crumbs" }, h("a", { href: href("/report") }, "Report"), " / items"),
    h("h1", { "data-testid": "items-title" }, title), await scopeBar(),
    h("p", { class: "muted" }, h("span", { "data-testid": "items-total", "data-total": d.total, "data-kind": d.kind }, `${fmt(d.total)} in all`), ` · judge run ${d.judge_run_id || "(none)"}`),
    list, pager(d.offset, PAGE, d.total, (o) => go("/items", { ...own, offset: o })));
}

// -- two judge runs compared -------------------------------------------------------------------------
async function viewCompare(params) {
  judgeRuns = judgeRuns || await api("/api/judge-runs");
  const ids = judgeRuns.map((j) => j.judge_run_id);
  const a = params.get("a") || ids[1] || ids[0] || "", b = params.get("b") || ids[0] || "";
  const offset = Number(params.get("offset") || 0);
  const sel = (name, value) => h("select", { "aria-label": `judge run ${name}`, "data-testid": `compare-${name}`, onchange: (e) => go("/compare", { a, b, [name]: e.target.value }) },
    ids.map((id) => h("option", { value: id, selected: id === value }, id)));
  const head = [h("h1", {}, "Judge runs"), await scopeBar(), h("div", { class: "wide" }, h("table", { class: "list" }, h("thead", {}, h("tr", {}, ["judge run", "model", "prompt", "verdicts", "valid", "invalid"].map((x) => h("th", {}, x)))),
    h("tbody", {}, judgeRuns.map((j) => h("tr", {}, h("td", {}, j.judge_run_id), h("td", {}, j.model), h("td", {}, j.prompt_version),
      h("td", { class: "num" }, fmt(j.verdicts)), h("td", { class: "num" }, fmt(j.valid)), h("td", { class: "num" }, fmt(j.invalid)))))))];
  if (!a || !b) { main().replaceChildren(...head, h("p", {}, "no judge run yet")); return; }
  const d = await api(`/api/judge-compare?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}&offset=${offset}&limit=${PAGE}`);
  const yn = (v) => v === null || v === undefined ? "–" : v ? "yes" : "no";
  const labels = Object.keys(d.comparison.labels);
  const rows = h("ol", { class: "itemlist", start: offset + 1 }, d.rows.map((r) => h("li", { class: `item ${r.status === "disagree" ? "disagree" : ""}`, "data-testid": "compare-row", "data-status": r.status },
    h("div", { class: "rhead" }, chip(r.status, r.status === "disagree" ? "bad" : r.status === "agree" ? "good" : "muted"), r.provider ? chip(r.provider) : null,
      r.trajectory_id ? tlink(r.trajectory_id, r.qid || r.trajectory_id) : null),
    h("div", { class: "url readable" }, r.url),
    h("table", { class: "pairs" }, h("tbody", {}, labels.map((l) => h("tr", { class: r.differs.includes(l) ? "bad" : "" },
      h("td", {}, l), h("td", {}, `A ${yn(r.a && r.a[l])}`), h("td", {}, `B ${yn(r.b && r.b[l])}`))))),
    r.a_rationale ? h("div", { class: "rationale" }, h("b", {}, "A: "), r.a_rationale) : null,
    r.b_rationale ? h("div", { class: "rationale" }, h("b", {}, "B: "), r.b_rationale) : null)));
  main().replaceChildren(...head,
    h("h2", {}, "Item by item"), h("div", { class: "filters" }, h("label", {}, "A ", sel("a", a)), h("label", {}, "B ", sel("b", b))),
    h("p", { class: "counts" }, chip(`${fmt(d.items)} items`), chip(`${fmt(d.valid_in_both)} valid in both`),
      h("span", { class: `chip ${d.disagreeing ? "bad" : ""}`, "data-testid": "disagreeing", "data-count": d.disagreeing }, `${fmt(d.disagreeing)} disagree`)),
    h("p", { "data-testid": "kappa" }, Object.entries(d.comparison.labels).map(([l, s]) =>
      chip(`${l}: agreement ${s.agreement === null ? "–" : s.agreement.toFixed(3)}, κ ${s.kappa === null ? "–" : s.kappa.toFixed(3)} (n ${fmt(s.n)})`))),
    h("p", { class: "muted" }, "Agreement as `searchtrace judge compare` counts it (docs/concepts/statistics.md): over the items with a valid verdict in both runs, per label. Disagreeing items first."),
    rows, pager(offset, PAGE, d.items, (o) => go("/compare", { a, b, offset: o })));
}

// -- SQL ---------------------------------------------------------------------------------------------
const ID_LINKS = { trajectory_id: (v) => href(`/t/${encodeURIComponent(v)}`), qid: (v) => href(`/q/${encodeURIComponent(v)}`) };
function csv(columns, rows) {
  const cell = (v) => { const s = v === null || v === undefined ? "" : typeof v === "object" ? JSON.stringify(v) : String(v); return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s; };
  return [columns, ...rows].map((r) => r.map(cell).join(",")).join("\r\n") + "\r\n";
}
async function viewSql(params) {
  const box = h("textarea", { rows: 6, "aria-label": "SQL", "data-testid": "sql-input" },
    params.get("q") || "SELECT provider, count(*) AS trajectories, count(*) FILTER (WHERE semantic_match) AS correct\nFROM v_trajectories GROUP BY provider ORDER BY provider");
  const out = h("div", { "data-testid": "sql-result" });
  const run = async () => {
    out.replaceChildren(h("p", { class: "muted" }, "running…"));
    try {
      const d = await api("/api/sql", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ sql: box.value }) });
      const link = d.columns.map((c) => ID_LINKS[c]);
      const file = URL.createObjectURL(new Blob([csv(d.columns, d.rows)], { type: "text/csv" }));
      out.replaceChildren(
        h("p", { class: "muted" }, `${d.rows.length} rows${d.truncated ? " (first rows only)" : ""} · `, h("a", { href: file, download: "searchtrace.csv", "data-testid": "sql-csv" }, "download CSV")),
        h("div", { class: "wide" }, h("table", { class: "list" },
          h("thead", {}, h("tr", {}, d.columns.map((c) => h("th", {}, c)))),
          h("tbody", {}, d.rows.map((r) => h("tr", {}, r.map((v, i) => h("td", {},
            link[i] && typeof v === "string" ? h("a", { href: link[i](v), "data-testid": "sql-id-link" }, v) : typeof v === "object" && v !== null ? JSON.stringify(v) : fmt(v)))))))));
    } catch (err) {
      out.replaceChildren(h("p", { class: "error", role: "alert" }, err.message));
    }
  };
  box.addEventListener("keydown", (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); run(); } });
  main().replaceChildren(h("h1", {}, "SQL"), await scopeBar(),
    h("p", { class: "muted" }, "Read-only, as `searchtrace sql`: events, blobs and the documented views v_trajectories, v_search_results, v_searches, v_fetches, v_judge_items, v_judge_runs, v_verdicts, v_usage, v_answers, v_audits. Ctrl+Enter runs; trajectory_id and qid columns link to their pages."),
    box, h("div", {}, h("button", { onclick: run, "data-testid": "sql-run" }, "Run"), h("span", { class: "muted" }, " Ctrl+Enter")), out);
}

// -- routing -------------------------------------------------------------------------------------
let liveTimer = null;
function watchList(params) {
  // the list re-draws when the store grows (a run recording), at most every 1.5 s, only on its first page
  clearInterval(liveTimer);
  if (Number(params.get("offset") || 0) > 0) return;
  const own = Object.fromEntries([...params.keys()].filter((k) => !SCOPE.includes(k)).map((k) => [k, params.get(k)]));
  let last = null;
  liveTimer = setInterval(async () => {
    try {
      // a poll: it does not keep the file held, so a record or merge started meanwhile can take it
      const d = await api(`/api/trajectories?${apiQuery({ ...own, limit: 1 })}`, { headers: { "X-Searchtrace-Poll": "1" } });
      const key = `${d.total}:${d.trajectories.length ? d.trajectories[0].trajectory_id : ""}`;
      if (last !== null && key !== last && document.activeElement.tagName !== "SELECT") { allRuns = null; await viewTrajectories(params); }
      last = key;
      document.getElementById("live").textContent = `${d.total.toLocaleString("en")} trajectories`;
    } catch (err) { /* the run may just have ended; the next tick reads the file */ }
  }, 1500);
}

async function route() {
  clearInterval(liveTimer);
  const { parts, params } = parseHash();
  const page = parts[0] || "trajectories";
  for (const a of document.querySelectorAll("nav a")) {
    a.classList.toggle("on", a.dataset.nav === (page === "t" || page === "q" ? "trajectories" : page === "items" ? "report" : page));
    a.setAttribute("href", href(a.dataset.path)); // the scope travels with the navigation
  }
  try {
    await loadVocabulary();
    if (page === "t") await viewTrajectory(parts.slice(1).join("/"), params);
    else if (page === "q") await viewQuestion(parts.slice(1).join("/"));
    else if (page === "report") await viewReport();
    else if (page === "items") await viewItems(params);
    else if (page === "compare") await viewCompare(params);
    else if (page === "sql") await viewSql(params);
    else { await viewTrajectories(params); watchList(params); }
    document.body.dataset.ready = location.hash;
  } catch (err) {
    showError(err);
  }
}
window.addEventListener("hashchange", route);
window.addEventListener("DOMContentLoaded", route);
