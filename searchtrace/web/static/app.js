// searchtrace explorer: draws every view from the JSON API. Data from the store is only ever set as text
// (textContent / attribute values), never parsed as HTML, so nothing a fetched page contains can run.
"use strict";

const PARTS = ["SMART", "MISSED", "BLIND", "NO-OP"];
const PART_MEANING = {
  "SMART": "surface supports gold, fetched",
  "MISSED": "surface supports gold, not fetched",
  "BLIND": "no surface support, fetched",
  "NO-OP": "no surface support, not fetched",
};
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
const fmt = (v) => v === null || v === undefined ? "–" : typeof v === "number" ? (Number.isInteger(v) ? v.toLocaleString("en") : v.toFixed(3)) : String(v);
const badge = (part) => h("span", { class: `badge part-${part === "NO-OP" ? "noop" : part.toLowerCase()}`, title: PART_MEANING[part], "data-testid": "badge" }, part);
const chip = (text, cls, title) => h("span", { class: `chip ${cls || ""}`, title: title || null }, text);

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
  const [path, query] = raw.split("?");
  return { parts: path.split("/").filter(Boolean).map(decodeURIComponent), params: new URLSearchParams(query || "") };
}
function go(path, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) if (v !== null && v !== undefined && v !== "") q.set(k, v);
  const s = q.toString();
  location.hash = `#${path}${s ? "?" + s : ""}`;
}
const tlink = (id, text) => h("a", { href: `#/t/${encodeURIComponent(id)}` }, text || id);
const qlink = (qid, text) => h("a", { href: `#/q/${encodeURIComponent(qid)}`, "data-testid": "question-link" }, text || qid);

let judgeRuns = null;
async function judgeRunSelect(current, onchange) {
  judgeRuns = judgeRuns || await api("/api/judge-runs");
  const sel = h("select", { "aria-label": "judge run", "data-testid": "judge-run", onchange: (e) => onchange(e.target.value) },
    judgeRuns.length ? null : h("option", { value: "" }, "no judge run"),
    judgeRuns.map((j) => h("option", { value: j.judge_run_id, selected: j.judge_run_id === current },
      `${j.judge_run_id} (${j.model || "?"}, ${j.valid} valid)`)));
  return h("label", {}, "judge run ", sel);
}

// -- trajectory list -------------------------------------------------------------------------------
async function viewTrajectories(params) {
  const q = new URLSearchParams(params);
  if (!q.get("limit")) q.set("limit", "50");
  const data = await api(`/api/trajectories?${q}`);
  const cur = Object.fromEntries(q);
  const set = (k) => (e) => go("/", { ...cur, [k]: e.target.value, offset: 0 });
  const select = (k, label, values, names) => h("label", {}, `${label} `,
    h("select", { "aria-label": label, "data-testid": `filter-${k}`, onchange: set(k) },
      h("option", { value: "" }, "all"),
      values.map((v, i) => h("option", { value: v, selected: String(v) === (cur[k] || "") }, names ? names[i] : v))));
  const search = h("input", { type: "search", placeholder: "question, qid, answer…", value: cur.q || "", "aria-label": "search", "data-testid": "filter-q" });
  search.addEventListener("change", set("q"));
  const c = data.counts;
  const bar = h("div", { class: "filters" },
    await judgeRunSelect(data.judge_run_id, (v) => go("/", { ...cur, judge_run_id: v, offset: 0 })),
    select("run", "run", data.facets.runs),
    select("provider", "provider", data.facets.providers),
    select("epoch", "epoch", data.facets.epochs),
    select("correct", "correct", ["true", "false", "unaudited"], ["correct", "incorrect", "unaudited"]),
    select("partition", "has item", PARTS),
    search);
  const counts = h("div", { class: "counts", "data-testid": "counts" },
    h("strong", { "data-testid": "total" }, `${fmt(data.total)} trajectories`),
    Object.entries(c.providers).map(([p, n]) => chip(`${p} ${fmt(n)}`)),
    Object.entries(c.correct).map(([k, n]) => chip(`${k === "true" ? "correct" : k === "false" ? "incorrect" : k} ${fmt(n)}`, `c-${k}`)),
    PARTS.map((p) => h("span", { class: "pcount" }, badge(p), ` ${fmt(c.partition[p])}`)));
  const rows = data.trajectories.map((t) => h("tr", { "data-testid": "trajectory-row" },
    h("td", {}, tlink(t.trajectory_id, t.provider)),
    h("td", { class: "q" }, qlink(t.qid, t.question || t.qid)),
    h("td", {}, t.final_answer === null ? h("span", { class: "muted" }, t.finish_reason || "running") : t.final_answer),
    h("td", {}, t.correct === null ? chip("unaudited", "c-unaudited") : chip(t.correct ? "correct" : "incorrect", `c-${t.correct}`)),
    h("td", { class: "num" }, fmt(t.searches)), h("td", { class: "num" }, fmt(t.fetches)),
    h("td", { class: "num" }, fmt(t.input_tokens + t.output_tokens)),
    h("td", { class: "parts" }, PARTS.filter((p) => t.partition[p]).map((p) => h("span", { class: "pcount" }, badge(p), ` ${t.partition[p]}`)))));
  const offset = Number(cur.offset || 0), limit = Number(cur.limit);
  const pager = h("div", { class: "pager" },
    h("button", { disabled: offset <= 0, onclick: () => go("/", { ...cur, offset: Math.max(0, offset - limit) }) }, "← newer"),
    ` ${data.total ? offset + 1 : 0}–${Math.min(offset + limit, data.total)} of ${fmt(data.total)} `,
    h("button", { disabled: offset + limit >= data.total, "data-testid": "next-page", onclick: () => go("/", { ...cur, offset: offset + limit }) }, "older →"));
  main().replaceChildren(h("h1", {}, "Trajectories"), bar, counts,
    h("div", { class: "wide" }, h("table", { class: "list" },
      h("thead", {}, h("tr", {}, ["provider", "question", "final answer", "audit", "searches", "fetches", "tokens", "items"].map((x) => h("th", {}, x)))),
      h("tbody", {}, rows))), pager);
}

// -- one trajectory as a timeline --------------------------------------------------------------------
function labelChips(item) {
  if (!item || item.valid === null || item.valid === undefined) return [chip("no verdict", "muted")];
  if (!item.valid) return [chip("invalid verdict", "bad", item.invalid_reason)];
  const out = [];
  const yes = (v, text, cls) => { if (v) out.push(chip(text, cls)); };
  yes(item.snippet_supports_gold, "snippet supports gold", "good");
  yes(item.snippet_contradicts_gold, "snippet contradicts gold", "bad");
  yes(item.snippet_relevant, "relevant");
  if (item.has_page) {
    yes(item.page_supports_gold, "page supports gold", "good");
    yes(item.page_contradicts_gold, "page contradicts gold", "bad");
    if (!item.page_supports_gold && !item.page_contradicts_gold) out.push(chip("page: no support", "muted"));
  }
  yes(item.supports_final_answer, "supports final answer");
  if (item.discovered) out.push(chip("discovered support", "good", "support found only after fetching"));
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

async function viewTrajectory(id, params) {
  const q = new URLSearchParams();
  if (params.get("judge_run_id")) q.set("judge_run_id", params.get("judge_run_id"));
  const t = await api(`/api/trajectories/${encodeURIComponent(id)}?${q}`);
  const items = Object.fromEntries(t.items.map((i) => [i.url_normalized, i]));
  const docItem = {};
  const timeline = h("ol", { class: "timeline", "data-testid": "timeline" });
  const calls = {};
  const seen = new Set();
  for (const s of t.steps) {
    const p = s.payload;
    if (s.type === "model.responded") {
      const u = p.usage || {};
      timeline.append(h("li", { class: "step model" },
        h("div", { class: "shead" }, h("b", {}, `model turn ${p.iteration}`),
          chip(`${fmt(u.input_tokens)} in / ${fmt(u.output_tokens)} out${u.reasoning_tokens ? ` / ${fmt(u.reasoning_tokens)} reasoning` : ""} tokens`),
          chip(`${fmt(p.latency_ms)} ms`), p.finish_reason ? chip(p.finish_reason, "muted") : null),
        p.text ? h("div", { class: "mtext" }, p.text) : null,
        (p.tool_calls || []).map((c) => h("div", { class: "toolcall" }, h("code", {}, `${c.name}(${c.arguments})`)))));
    } else if (s.type === "search.called") {
      const list = h("ol", { class: "results" });
      const status = h("span", {});
      calls[p.call_id] = { list, status };
      timeline.append(h("li", { class: "step search", "data-testid": "search" },
        h("div", { class: "shead" }, h("b", {}, "search "), h("q", {}, p.query), " ", status), list));
    } else if (s.type === "search.result") {
      docItem[p.doc_id] = p.url_normalized;
      const call = calls[p.call_id];
      const row = resultRow(p, items[p.url_normalized], !seen.has(p.url_normalized));
      seen.add(p.url_normalized);
      if (call) call.list.append(row); else timeline.append(h("li", { class: "step" }, row));
    } else if (s.type === "search.completed") {
      const call = calls[p.call_id];
      if (call) call.status.replaceChildren(chip(p.status, p.status === "ok" ? "" : "bad"), chip(`${fmt(p.n_results)} results`), chip(`${fmt(p.latency_ms)} ms`));
    } else if (s.type === "fetch.called") {
      const body = h("div", {});
      calls[`fetch:${p.call_id}:${p.doc_id}`] = body;
      const item = items[docItem[p.doc_id]];
      timeline.append(h("li", { class: "step fetch", "data-testid": "fetch" },
        h("div", { class: "shead" }, h("b", {}, "fetch "), item && item.part ? badge(item.part) : null, h("span", { class: "url" }, p.url)), body));
    } else if (s.type === "fetch.completed") {
      const body = calls[`fetch:${p.call_id}:${p.doc_id}`];
      const parts = [h("div", {}, chip(p.status, p.status === "ok" ? "" : "bad"), chip(`${fmt(p.n_tokens)} tokens`),
        chip(`${fmt(p.latency_ms)} ms`), p.cache_hit ? chip("cache hit", "muted") : null),
        p.content_digest ? pageBlock(t.pages[p.content_digest]) : null];
      if (body) body.append(...parts.filter(Boolean)); else timeline.append(h("li", { class: "step" }, parts));
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
  const a = t.answer;
  const answer = h("section", { class: "answer", "data-testid": "answer" },
    h("div", {}, h("b", {}, "final answer: "), a.final === null ? h("span", { class: "muted" }, "none") : a.final),
    h("div", {}, h("b", {}, "gold: "), a.gold),
    h("div", {}, chip(`EM ${a.exact_match}`), chip(`F1 ${a.token_f1.toFixed(3)}`),
      a.semantic_match === null ? chip("unaudited", "c-unaudited") : chip(a.semantic_match ? "correct" : "incorrect", `c-${a.semantic_match}`),
      a.audit_source ? chip(`audit: ${a.audit_source}`, "muted") : null));
  main().replaceChildren(
    h("p", { class: "crumbs" }, h("a", { href: "#/" }, "Trajectories"), " / ", t.trajectory_id),
    h("h1", {}, t.question),
    h("div", { class: "filters" }, chip(t.provider), chip(`qid ${t.qid}`), chip(`run ${t.run_id}`),
      qlink(t.qid, "this question across providers"),
      await judgeRunSelect(t.judge_run_id, (v) => go(`/t/${encodeURIComponent(id)}`, { judge_run_id: v })),
      t.current ? null : chip("superseded attempt", "bad")),
    answer,
    h("div", { class: "counts" }, PARTS.map((p) => h("span", { class: "pcount" }, badge(p), ` ${t.partition[p]}`)),
      chip(`${t.items.length} items`)),
    timeline);
}

// -- one question across providers -------------------------------------------------------------------
async function viewQuestion(qid, params) {
  const q = new URLSearchParams();
  if (params.get("judge_run_id")) q.set("judge_run_id", params.get("judge_run_id"));
  const d = await api(`/api/questions/${encodeURIComponent(qid)}?${q}`);
  const cols = d.trajectories.map((t) => h("section", { class: "col", "data-testid": "provider-column" },
    h("h2", {}, tlink(t.trajectory_id, t.epoch > 1 ? `${t.provider} (epoch ${t.epoch})` : t.provider)),
    h("div", {}, h("b", {}, "answer: "), t.final_answer === null ? h("span", { class: "muted" }, "none") : t.final_answer, " ",
      t.semantic_match === null ? chip("unaudited", "c-unaudited") : chip(t.semantic_match ? "correct" : "incorrect", `c-${t.semantic_match}`)),
    t.searches.map((s) => h("div", { class: "qsearch" }, h("div", { class: "shead" }, h("q", {}, s.query), " ", chip(s.status || "?")),
      h("ol", { class: "results" }, s.results.map((r) => {
        const shared = (d.shared_urls[r.url_normalized] || []).filter((p) => p !== t.provider);
        return h("li", { class: `result${shared.length ? " shared" : ""}` },
          h("div", { class: "rhead" }, h("span", { class: "rank" }, `#${r.rank}`), r.part ? badge(r.part) : null,
            h("span", { class: "title" }, r.title || r.url), h("span", { class: "domain" }, r.domain),
            r.fetched ? chip("fetched", "fetched") : null,
            shared.length ? chip(`also ${shared.join(", ")}`, "shared", "this URL was also a result for these providers") : null),
          h("div", { class: "snippet" }, r.snippet));
      }))))));
  main().replaceChildren(
    h("p", { class: "crumbs" }, h("a", { href: "#/" }, "Trajectories"), " / question ", qid),
    h("h1", {}, d.question), h("p", {}, h("b", {}, "gold: "), d.gold_answer, " ",
      chip(`${Object.keys(d.shared_urls).length} URLs shared between providers`, "shared")),
    h("div", { class: "cols", "data-testid": "side-by-side" }, cols));
}

// -- report, judge runs, SQL -------------------------------------------------------------------------
async function viewReport(params) {
  const jr = params.get("judge_run_id") || "", run = params.get("run") || "";
  const sp = new URLSearchParams();
  if (jr) sp.set("judge_run_id", jr);
  if (run) run.split(",").forEach((r) => sp.append("run", r));
  const q = sp.toString() ? `?${sp}` : "";
  // a store of several runs reports one run (or several, chosen together) at a time: never merged silently
  const runs = (await api("/api/runs")).filter((r) => r.trajectories > 0).map((r) => r.run_id);
  const choose = runs.length > 1 && !run;
  const runSelect = runs.length > 1 ? h("select", { "aria-label": "run", "data-testid": "report-run", onchange: (e) => go("/report", { judge_run_id: jr, run: e.target.value }) },
    h("option", { value: "", selected: !run }, "choose a run…"),
    runs.map((r) => h("option", { value: r, selected: r === run }, r)),
    runs.length > 1 ? h("option", { value: runs.join(","), selected: run === runs.join(",") }, "all runs together") : null) : null;
  main().replaceChildren(h("h1", {}, "Report"),
    h("div", { class: "filters" }, await judgeRunSelect(jr, (v) => go("/report", { judge_run_id: v, run })), runSelect,
      h("a", { href: `/api/report${q}` }, "JSON")),
    choose ? h("p", { "data-testid": "choose-run" }, `This store holds ${runs.length} runs: choose one to report.`)
      : h("iframe", { class: "report", src: `/report.html${q}`, title: "report", sandbox: "" }));
}

async function viewCompare(params) {
  judgeRuns = judgeRuns || await api("/api/judge-runs");
  const ids = judgeRuns.map((j) => j.judge_run_id);
  const a = params.get("a") || ids[1] || ids[0] || "", b = params.get("b") || ids[0] || "";
  const sel = (name, value) => h("select", { "aria-label": `judge run ${name}`, onchange: (e) => go("/compare", { a, b, [name]: e.target.value }) },
    ids.map((id) => h("option", { value: id, selected: id === value }, id)));
  const head = [h("h1", {}, "Judge runs"), h("table", { class: "list" }, h("thead", {}, h("tr", {}, ["judge run", "model", "prompt", "verdicts", "valid", "invalid"].map((x) => h("th", {}, x)))),
    h("tbody", {}, judgeRuns.map((j) => h("tr", {}, h("td", {}, j.judge_run_id), h("td", {}, j.model), h("td", {}, j.prompt_version),
      h("td", { class: "num" }, fmt(j.verdicts)), h("td", { class: "num" }, fmt(j.valid)), h("td", { class: "num" }, fmt(j.invalid))))))];
  if (!a || !b) { main().replaceChildren(...head, h("p", {}, "no judge run yet")); return; }
  const d = await api(`/api/judge-compare?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}`);
  const cell = (v) => v === null || v === undefined ? "–" : v ? "yes" : "no";
  const labels = Object.keys(d.labels);
  main().replaceChildren(...head,
    h("h2", {}, "Item by item"), h("div", { class: "filters" }, h("label", {}, "A ", sel("a", a)), h("label", {}, "B ", sel("b", b)),
      chip(`${fmt(d.items)} items`), chip(`${fmt(d.disagreeing)} disagree`, d.disagreeing ? "bad" : "")),
    h("p", {}, labels.map((l) => chip(`${l}: ${fmt(d.labels[l].agree)}/${fmt(d.labels[l].both)} agree`))),
    h("p", { "data-testid": "kappa" }, Object.entries(d.comparison.labels).map(([l, s]) =>
      chip(`${l}: κ ${s.kappa === null ? "–" : s.kappa.toFixed(3)} (n ${fmt(s.n)})`))),
    h("div", { class: "wide" }, h("table", { class: "list" },
      h("thead", {}, h("tr", {}, h("th", {}, "trajectory"), h("th", {}, "url"), labels.map((l) => h("th", {}, l)), h("th", {}, "rationale A"), h("th", {}, "rationale B"))),
      h("tbody", {}, d.rows.map((r) => h("tr", { class: r.disagree.length ? "disagree" : "" },
        h("td", {}, tlink(r.trajectory_id)), h("td", { class: "url" }, r.url_normalized),
        labels.map((l) => h("td", { class: r.disagree.includes(l) ? "bad" : "" }, `${cell(r[`a_${l}`])} / ${cell(r[`b_${l}`])}`)),
        h("td", { class: "rationale" }, r.a_rationale || ""), h("td", { class: "rationale" }, r.b_rationale || "")))))),
    d.truncated ? h("p", { class: "muted" }, "first rows only") : null);
}

function viewSql(params) {
  const box = h("textarea", { rows: 6, "aria-label": "SQL", "data-testid": "sql-input" },
    params.get("q") || "SELECT provider, count(*) AS trajectories, count(*) FILTER (WHERE semantic_match) AS correct\nFROM v_trajectories GROUP BY provider ORDER BY provider");
  const out = h("div", { "data-testid": "sql-result" });
  const run = async () => {
    out.replaceChildren(h("p", { class: "muted" }, "running…"));
    try {
      const d = await api("/api/sql", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ sql: box.value }) });
      if (d.error) throw new Error(d.error);
      out.replaceChildren(h("div", { class: "wide" }, h("table", { class: "list" },
        h("thead", {}, h("tr", {}, d.columns.map((c) => h("th", {}, c)))),
        h("tbody", {}, d.rows.map((r) => h("tr", {}, r.map((v) => h("td", {}, typeof v === "object" && v !== null ? JSON.stringify(v) : fmt(v)))))))),
        h("p", { class: "muted" }, `${d.rows.length} rows${d.truncated ? " (first rows only)" : ""}`));
    } catch (err) {
      out.replaceChildren(h("p", { class: "error", role: "alert" }, err.message));
    }
  };
  main().replaceChildren(h("h1", {}, "SQL"),
    h("p", { class: "muted" }, "Read-only, as `searchtrace sql`: events, blobs and the documented views v_trajectories, v_search_results, v_searches, v_fetches, v_judge_items, v_judge_runs, v_verdicts, v_usage, v_answers, v_audits."),
    box, h("div", {}, h("button", { onclick: run, "data-testid": "sql-run" }, "Run")), out);
}

// -- routing -------------------------------------------------------------------------------------
let liveTimer = null;
function watchList(params) {
  // the list re-draws when the store grows (a run recording), at most every 1.5 s, only on its first page
  clearInterval(liveTimer);
  const q = new URLSearchParams(params);
  if (Number(q.get("offset") || 0) > 0) return;
  q.set("limit", "1");
  let last = null;
  liveTimer = setInterval(async () => {
    try {
      const d = await api(`/api/trajectories?${q}`);
      const key = `${d.total}:${d.trajectories.length ? d.trajectories[0].trajectory_id : ""}`;
      if (last !== null && key !== last && document.activeElement.tagName !== "SELECT") await viewTrajectories(params);
      last = key;
      document.getElementById("live").textContent = `${d.total.toLocaleString("en")} trajectories`;
    } catch (err) { /* the run may just have ended; the next tick reads the file */ }
  }, 1500);
}

async function route() {
  clearInterval(liveTimer);
  const { parts, params } = parseHash();
  const page = parts[0] || "trajectories";
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("on", a.dataset.nav === (page === "t" || page === "q" ? "trajectories" : page));
  try {
    if (page === "t") await viewTrajectory(parts.slice(1).join("/"), params);
    else if (page === "q") await viewQuestion(parts.slice(1).join("/"), params);
    else if (page === "report") await viewReport(params);
    else if (page === "compare") await viewCompare(params);
    else if (page === "sql") viewSql(params);
    else { await viewTrajectories(params); watchList(params); }
    document.body.dataset.ready = location.hash;
  } catch (err) {
    showError(err);
  }
}
window.addEventListener("hashchange", route);
window.addEventListener("DOMContentLoaded", route);
