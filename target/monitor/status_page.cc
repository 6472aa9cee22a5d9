#include "target/monitor/status_page.h"

#include <string>

#include "target/monitor/metric_table.h"

namespace dedupv1 {

namespace {

const char kPage[] = R"page(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>dedupv1 monitor</title>
<style>
  :root { --bg:#f4f6f8; --card:#fff; --ink:#1d2630; --muted:#66727f; --line:#dde3e9;
          --write:#2b6cb0; --read:#dd6b20; --ok:#2f855a; --bad:#c53030; }
  * { box-sizing: border-box; }
  body { margin:0; font:14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif;
         background:var(--bg); color:var(--ink); }
  header { display:flex; align-items:baseline; gap:16px; padding:14px 24px;
           background:#1d2630; color:#fff; }
  header h1 { margin:0; font-size:20px; }
  header .meta { color:#b8c4d0; font-size:13px; }
  #conn { margin-left:auto; font-size:13px; }
  #conn.ok::before { content:"\25CF "; color:#68d391; }
  #conn.bad::before { content:"\25CF "; color:#fc8181; }
  main { padding:16px 24px; display:grid; gap:16px;
         grid-template-columns:repeat(auto-fit, minmax(360px, 1fr)); }
  section { background:var(--card); border:1px solid var(--line); border-radius:8px;
            padding:14px 16px; }
  section.wide { grid-column:1 / -1; }
  @media (min-width: 1100px) { section.span2 { grid-column:span 2; } }
  .scroll { overflow-x:auto; }
  td:first-child { white-space:nowrap; }
  h2 { margin:0 0 10px; font-size:15px; color:var(--muted); font-weight:600;
       text-transform:uppercase; letter-spacing:.04em; }
  .cards { display:grid; gap:12px; grid-template-columns:repeat(auto-fit, minmax(170px, 1fr)); }
  .card .label { color:var(--muted); font-size:12px; }
  .card .value { font-size:26px; font-weight:600; font-variant-numeric:tabular-nums; }
  .card .sub { color:var(--muted); font-size:12px; }
  #write-now { color:var(--write); } #read-now { color:var(--read); }
  table { width:100%; border-collapse:collapse; font-variant-numeric:tabular-nums; }
  th, td { text-align:right; padding:3px 6px; border-bottom:1px solid var(--line); }
  th:first-child, td:first-child { text-align:left; }
  th { color:var(--muted); font-weight:600; font-size:12px; }
  dl { display:grid; grid-template-columns:auto 1fr; gap:3px 16px; margin:0; }
  dt { color:var(--muted); } dd { margin:0; text-align:right; font-variant-numeric:tabular-nums; }
  .bar { height:8px; background:var(--line); border-radius:4px; overflow:hidden; margin:6px 0 10px; }
  .bar > div { height:100%; background:var(--write); width:0; }
  .na { color:var(--muted); font-style:italic; margin:0; }
  .err { color:var(--bad); }
  canvas { width:100%; height:260px; display:block; }
  .legend { font-size:12px; color:var(--muted); }
  .legend b.w { color:var(--write); } .legend b.r { color:var(--read); }
  footer { padding:0 24px 20px; color:var(--muted); font-size:12px; }
  footer a { color:var(--muted); }
</style>
</head>
<body>
<header>
  <h1>dedupv1</h1>
  <span class="meta">version <span id="version">&ndash;</span></span>
  <span class="meta">up <span id="uptime">&ndash;</span></span>
  <span class="meta">updated <span id="updated">&ndash;</span></span>
  <span id="conn" class="bad">connecting</span>
</header>
<main>
  <section class="wide">
    <h2>Deduplication and throughput</h2>
    <div class="cards">
      <div class="card"><div class="label">Dedup ratio</div>
        <div class="value" id="dedup-ratio" data-value="">&ndash;</div>
        <div class="sub">logical bytes per stored byte</div></div>
      <div class="card"><div class="label">Saved</div>
        <div class="value" id="saved-bytes" data-value="">&ndash;</div>
        <div class="sub"><span id="logical-bytes">&ndash;</span> logical,
          <span id="stored-bytes">&ndash;</span> stored</div></div>
      <div class="card"><div class="label">Write throughput (now)</div>
        <div class="value" id="write-now" data-value="" data-time="">&ndash;</div>
        <div class="sub"><span id="write-iops">&ndash;</span> writes/s</div></div>
      <div class="card"><div class="label">Read throughput (now)</div>
        <div class="value" id="read-now" data-value="" data-time="">&ndash;</div>
        <div class="sub"><span id="read-iops">&ndash;</span> reads/s</div></div>
      <div class="card"><div class="label">Chunks</div>
        <div class="value" id="chunks">&ndash;</div>
        <div class="sub"><span id="chunks-new">&ndash;</span> new,
          <span id="chunks-known">&ndash;</span> known, <span id="chunks-zero">&ndash;</span> zero</div></div>
      <div class="card"><div class="label">Write buffer</div>
        <div class="value" id="dirty-bytes">&ndash;</div>
        <div class="sub">not yet deduplicated, in <span id="buffer-used">&ndash;</span>
          of <span id="buffer-limit">&ndash;</span> memory</div></div>
    </div>
  </section>
  <section class="wide">
    <h2>Throughput, <span id="chart-span">last hour</span></h2>
    <canvas id="chart" width="1200" height="260"></canvas>
    <div class="legend"><b class="w">&#9632; write</b> &nbsp; <b class="r">&#9632; read</b>
      &nbsp; 10&nbsp;s averages, last minutes at 1&nbsp;s &middot; peak <span id="chart-peak">&ndash;</span></div>
  </section>
  <section>
    <h2>Volumes</h2>
    <table id="volumes"><thead><tr><th>Volume</th><th>Id</th><th>Size</th><th>Written</th><th>Read</th><th>Write now</th><th>Read now</th><th>Dirty</th><th>Dirty blocks</th></tr></thead>
      <tbody></tbody></table>
  </section>
  <section class="span2">
    <h2>Filter chain (chunks per result)</h2>
    <div class="scroll"><table id="filters"><thead><tr><th>Filter</th><th>Existing</th><th>Strong maybe</th>
      <th>Weak maybe</th><th>Not existing</th><th>Error</th><th>Skipped</th></tr></thead>
      <tbody></tbody></table></div>
  </section>
  <section>
    <h2>Chunk index</h2>
    <div class="bar"><div id="ci-fill-bar"></div></div>
    <dl id="chunk-index"></dl>
  </section>
  <section>
    <h2>Block index</h2>
    <dl id="block-index"></dl>
  </section>
  <section>
    <h2>Containers</h2>
    <dl id="containers"></dl>
    <p class="na" id="containers-merge"></p>
  </section>
  <section>
    <h2>Operations log</h2>
    <dl id="log"></dl><p class="na" id="log-na"></p>
  </section>
  <section>
    <h2>Garbage collection</h2>
    <dl id="gc"></dl><p class="na" id="gc-na"></p>
  </section>
  <section>
    <h2>Cache (iCache)</h2>
    <dl id="cache"></dl>
  </section>
  <section>
    <h2>Idle state</h2>
    <dl id="idle"></dl><p class="na" id="idle-na"></p>
  </section>
  <section>
    <h2>Storage backend</h2>
    <dl id="backend"></dl>
  </section>
  <section class="wide" id="cluster-section" hidden>
    <h2>Gateway cluster</h2>
    <div class="scroll"><table id="cluster">
      <thead><tr><th>gateway</th><th>slot</th><th>state</th><th>incarnation</th><th>takeovers</th>
        <th>lock</th><th>beat</th><th>claims pending</th><th>shard load</th><th>portal</th><th>holder</th>
        <th>volumes</th></tr></thead>
      <tbody></tbody></table></div>
    <p class="na" id="cluster-load"></p>
    <p class="na err" id="cluster-err"></p>
  </section>
</main>
<footer>
  JSON: <a href="stats">stats</a> &middot; <a href="volumes">volumes</a> &middot;
  <a href="index">index</a> &middot; <a href="containers">containers</a> &middot;
  <a href="filters">filters</a> &middot; <a href="log">log</a> &middot; <a href="gc">gc</a> &middot;
  <a href="idle">idle</a> &middot; <a href="config">config</a> &middot; <a href="version">version</a> &middot;
  <a href="history">history</a> &middot; <a href="cluster">cluster</a> &middot; <a href="metrics">metrics</a> &middot; <a href="api">api</a>
</footer>
<script>
"use strict";
const UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
function bytes(n) {
  if (typeof n !== "number" || !isFinite(n)) return "\u2013";
  let i = 0;
  while (Math.abs(n) >= 1024 && i < UNITS.length - 1) { n /= 1024; i++; }
  return (i === 0 ? n.toFixed(0) : n.toFixed(n < 10 ? 2 : 1)) + " " + UNITS[i];
}
function rate(n) { return bytes(n) + "/s"; }
const prevVolumes = {};
function count(n) { return typeof n === "number" ? n.toLocaleString("en-US") : "\u2013"; }
function pct(x) { return typeof x === "number" ? (100 * x).toFixed(1) + " %" : "\u2013"; }
function duration(s) {
  s = Math.floor(s);
  const d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600), m = Math.floor(s % 3600 / 60);
  const pad = (x) => String(x).padStart(2, "0");
  return (d ? d + "d " : "") + (d || h ? h + "h " : "") + pad(m) + "m " + pad(s % 60) + "s";
}
function $(id) { return document.getElementById(id); }
function text(id, t) { $(id).textContent = t; }
function setValue(id, raw, shown, time) {
  const e = $(id);
  e.textContent = shown;
  e.dataset.value = String(raw);
  if (time !== undefined) e.dataset.time = String(time);
}
function fillList(id, rows) {
  const dl = $(id);
  dl.replaceChildren();
  for (const [k, v] of rows) {
    const dt = document.createElement("dt"), dd = document.createElement("dd");
    dt.textContent = k; dd.textContent = v;
    dl.append(dt, dd);
  }
}
function fillTable(id, rows) {
  const tbody = $(id).tBodies[0];
  tbody.replaceChildren();
  for (const row of rows) {
    const tr = document.createElement("tr");
    for (const cell of row) {
      const td = document.createElement("td");
      td.textContent = cell;
      tr.append(td);
    }
    tbody.append(tr);
  }
}
// The lists of the sections, [label, value of the section object v], made
// from the metric table (target/monitor/metric_table.cc) by the server.
const PAGE_LISTS = @PAGE_LISTS@;
function pageLines(section, v) { return PAGE_LISTS[section].map(([label, value]) => [label, value(v)]); }
// The lines whose keys the section has (rows present only for some stores,
// e.g. the RADOS figures of a rados store).
function presentLines(section, v) {
  return PAGE_LISTS[section].flatMap(([label, value]) => {
    try {
      const x = value(v);
      return typeof x === "string" && /undefined|NaN/.test(x) ? [] : [[label, x]];
    } catch (e) {
      return [];
    }
  });
}
// A part that is not built yet: its JSON says {"available": false, "message"}.
function availability(part, listId, naId) {
  const na = $(naId);
  if (part && part.available === false) {
    na.textContent = part.message;
    return false;
  }
  na.textContent = "";
  return true;
}

function render(s) {
  text("version", s.version);
  text("uptime", duration(s.uptime_seconds));
  text("updated", new Date(s.time_ms).toLocaleTimeString("en-GB"));
  const d = s.dedup;
  setValue("dedup-ratio", d.ratio, d.ratio.toFixed(2) + "\u00d7");
  setValue("saved-bytes", d.saved_bytes, bytes(d.saved_bytes));
  text("logical-bytes", bytes(d.logical_bytes));
  text("stored-bytes", bytes(d.stored_bytes));
  text("chunks", count(d.chunks));
  text("chunks-new", count(d.chunks_new));
  text("chunks-known", count(d.chunks_known));
  text("chunks-zero", count(d.chunks_zero));
  text("dirty-bytes", bytes(s.write_buffer.dirty_bytes));
  text("buffer-used", bytes(s.write_buffer.used_bytes));
  text("buffer-limit", bytes(s.write_buffer.limit_bytes));
  const t = s.throughput;
  if (t.available) {
    setValue("write-now", t.write_bytes_per_second, rate(t.write_bytes_per_second), t.time_ms);
    setValue("read-now", t.read_bytes_per_second, rate(t.read_bytes_per_second), t.time_ms);
    text("write-iops", t.write_ops_per_second.toFixed(1));
    text("read-iops", t.read_ops_per_second.toFixed(1));
  }

  // Per-volume rates from the change since the previous refresh.
  const now = Date.now();
  fillTable("volumes", s.volumes.map(v => {
    const p = prevVolumes[v.name];
    const dt = p ? (now - p.time) / 1000 : 0;
    const wr = dt > 0 ? rate(Math.max(0, v.written_bytes - p.written) / dt) : "-";
    const rd = dt > 0 ? rate(Math.max(0, v.read_bytes - p.read) / dt) : "-";
    prevVolumes[v.name] = {time: now, written: v.written_bytes, read: v.read_bytes};
    return [v.name, v.id, bytes(v.size_bytes), bytes(v.written_bytes), bytes(v.read_bytes), wr, rd,
            bytes(v.dirty_bytes), count(v.dirty_blocks)];
  }));
  fillTable("filters", s.filters.map(f =>
      [f.name, count(f.existing), count(f.strong_maybe), count(f.weak_maybe),
       count(f.not_existing), count(f.error), count(f.skipped)]));

  const ci = s.chunk_index;
  $("ci-fill-bar").style.width = Math.min(100, 100 * ci.fill_ratio).toFixed(1) + "%";
  fillList("chunk-index", pageLines("chunk_index", ci));
  const bi = s.block_index;
  fillList("block-index", pageLines("block_index", bi));
  const c = s.containers;
  fillList("containers", pageLines("containers", c));
  $("containers-merge").textContent = !c.merge ? "" : c.merge.available === false ? "GC / merge: " + c.merge.message
      : "GC: " + c.merge.containers_merged + " merged into " + c.merge.merged_containers_written + ", " + c.merge.containers_deleted + " deleted";
  const l = s.log;
  fillList("log", availability(l, "log", "log-na") ? pageLines("log", l) : []);
  fillList("gc", availability(s.gc, "gc", "gc-na") ? Object.entries(s.gc) : []);
  if (s.cache) fillList("cache", s.cache.enabled ? pageLines("cache", s.cache) : [["Budget", "fixed caches (cache.budget unset)"]]);
  const i = s.idle;
  fillList("idle", availability(i, "idle", "idle-na") ? pageLines("idle", i) : []);
  if (s.backend) fillList("backend", presentLines("backend", s.backend));
}

function drawChart(h) {
  const canvas = $("chart");
  const ratio = window.devicePixelRatio || 1;
  const w = canvas.clientWidth || 1200, ht = canvas.clientHeight || 260;
  canvas.width = w * ratio; canvas.height = ht * ratio;
  const g = canvas.getContext("2d");
  g.scale(ratio, ratio);
  g.clearRect(0, 0, w, ht);
  // Coarse (10 s) points for the hour, then the finer 1 s points after them.
  const pts = [];
  const fine = h.fine, coarse = h.coarse;
  const firstFine = fine.time_ms.length ? fine.time_ms[0] : Infinity;
  coarse.time_ms.forEach((t, i) => { if (t < firstFine)
      pts.push([t, coarse.write_bytes_per_second[i], coarse.read_bytes_per_second[i]]); });
  fine.time_ms.forEach((t, i) => pts.push([t, fine.write_bytes_per_second[i], fine.read_bytes_per_second[i]]));
  const now = pts.length ? pts[pts.length - 1][0] : Date.now();
  // Up to an hour; a young system gets a narrower window (5 minute steps)
  // so its first minutes are not squeezed into a sliver.
  const age = pts.length ? now - pts[0][0] : 0;
  const spanMin = Math.min(60, Math.max(5, 5 * Math.ceil(age / 300000)));
  const span = spanMin * 60000, left = 70, right = 10, top = 10, bottom = 24;
  text("chart-span", spanMin === 60 ? "last hour" : "last " + spanMin + " minutes");
  let peak = 0;
  for (const p of pts) if (p[0] >= now - span) peak = Math.max(peak, p[1], p[2]);
  text("chart-peak", rate(peak));
  const ymax = peak > 0 ? peak * 1.1 : 1;
  const x = (t) => left + (w - left - right) * (1 - (now - t) / span);
  const y = (v) => ht - bottom - (ht - top - bottom) * (v / ymax);
  g.strokeStyle = "#dde3e9"; g.fillStyle = "#66727f"; g.lineWidth = 1; g.font = "11px sans-serif";
  for (let i = 0; i <= 4; i++) {
    const v = ymax * i / 4, yy = y(v);
    g.beginPath(); g.moveTo(left, yy); g.lineTo(w - right, yy); g.stroke();
    g.fillText(rate(v), 4, yy + 4);
  }
  for (let m = 0; m <= spanMin; m += spanMin / 5) {
    const xx = x(now - m * 60000);
    g.fillText(m === 0 ? "now" : "-" + m + "m", xx - 12, ht - 6);
  }
  for (const [col, color] of [[1, "#2b6cb0"], [2, "#dd6b20"]]) {
    g.strokeStyle = color; g.lineWidth = 1.5; g.beginPath();
    let started = false;
    for (const p of pts) {
      if (p[0] < now - span) continue;
      if (!started) { g.moveTo(x(p[0]), y(p[col])); started = true; } else g.lineTo(x(p[0]), y(p[col]));
    }
    g.stroke();
  }
}

function connection(ok, msg) {
  const e = $("conn");
  e.className = ok ? "ok" : "bad";
  e.textContent = ok ? "live" : msg;
}
async function refreshStats() {
  try {
    const r = await fetch("stats", {cache: "no-store"});
    if (!r.ok) throw new Error("HTTP " + r.status);
    render(await r.json());
    connection(true);
  } catch (e) {
    connection(false, "disconnected: " + e.message);
  }
}
// Gateway mode only: /cluster answers 404 otherwise and the section stays
// hidden. Read from RADOS by the server, so refreshed every 5 s.
async function refreshCluster() {
  try {
    const r = await fetch("cluster", {cache: "no-store"});
    if (r.status === 404) return;
    $("cluster-section").hidden = false;
    const c = await r.json();
    if (!r.ok) { text("cluster-err", c.message || ("HTTP " + r.status)); return; }
    text("cluster-err", "");
    fillTable("cluster", c.gateways.map((g) => [g.gateway, g.slot, g.state, g.incarnation, g.takeovers,
        g.lock_held ? "held" : "free", g.heartbeat ? g.heartbeat.beat + "@" + g.heartbeat.incarnation : "\u2013",
        g.heartbeat && "claims_pending" in g.heartbeat ? count(g.heartbeat.claims_pending) : "\u2013",
        g.heartbeat && "shard_ops_total" in g.heartbeat
            ? count(g.heartbeat.shard_ops_total) + " ops, max/mean " + g.heartbeat.shard_max_over_mean.toFixed(2)
            : "\u2013",
        g.heartbeat && g.heartbeat.portal ? g.heartbeat.portal : "\u2013",
        g.holder.host ? g.holder.host + " pid " + g.holder.pid : "\u2013",
        g.volumes.map((v) => v.name).join(", ")]));
    text("cluster-load", "claims pending: " + count(c.claims_pending) + " (all gateways); shard load max/mean: " +
        (c.shard_max_over_mean || 0).toFixed(2) + " (busiest gateway)");
  } catch (e) { /* refreshStats reports the connection state */ }
}
async function refreshHistory() {
  try {
    const r = await fetch("history", {cache: "no-store"});
    if (!r.ok) return;
    const h = await r.json();
    if (h.available) drawChart(h);
  } catch (e) { /* refreshStats reports the connection state */ }
}
refreshStats();
refreshHistory();
refreshCluster();
setInterval(refreshStats, 1000);
setInterval(refreshCluster, 5000);
setInterval(refreshHistory, 5000);
</script>
</body>
</html>
)page";

}  // namespace

const std::string& StatusPageHtml() {
  static const std::string* page = [] {
    std::string html(kPage);
    const std::string marker = "@PAGE_LISTS@";
    html.replace(html.find(marker), marker.size(), StatusPageListsScript());
    return new std::string(std::move(html));
  }();
  return *page;
}

}  // namespace dedupv1
