#include "report/HtmlPage.hpp"

namespace memtrack::report {

// The page works from data.series (HtmlFormat.cpp): for the views, the range of buckets and the
// process picked, it sums each series, builds the call tree (root first, or leaf first when
// inverted) and draws it and the tables. Live at the peak is each series' exact share of the
// recording's peak when the range holds it and every process is shown; otherwise the page
// takes the bucket, in the range, at whose end the shown series held the most, and their live
// bytes there (to a bucket's width: it says so).
// With data.diff (report --diff, diff_html) there is no time: the page draws one differential
// flamegraph of both recordings' sites matched by stack, widths by ARTIFACT's amounts (or
// BASE's), each frame coloured by how its amount changed (class grew, shrank or same), and
// the totals and the sites that changed as tables of base, new and change.
const std::string_view kHtmlHead = R"MTHTML(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>memtrack report</title>
<style>
html { overflow-y: scroll; }  /* a scrollbar that comes and goes would change the flamegraph's width */
body { font: 14px/1.4 system-ui, sans-serif; margin: 16px 24px; color: #222; background: #fff; }
h1 { font-size: 20px; margin: 0 0 8px; }
h2 { font-size: 16px; margin: 20px 0 8px; }
#summary { margin: 0 0 8px; }
.controls { margin: 8px 0; display: flex; gap: 8px; align-items: center; flex-wrap: wrap; }
.controls button.on { background: #333; color: #fff; }
#flame { position: relative; width: 100%; overflow: hidden; border: 1px solid #ddd; }
.fg { position: absolute; height: 17px; box-sizing: border-box; border: 1px solid #fff; overflow: hidden;
      white-space: nowrap; font: 11px/15px monospace; padding: 0 3px; cursor: pointer; }
.fg:hover { border-color: #000; }
.fg.match { background: #e040fb !important; }
.fg.dim { opacity: .45; }
#tip { position: fixed; display: none; z-index: 10; background: #fffde7; border: 1px solid #999; padding: 4px 8px;
       font-size: 12px; max-width: 600px; pointer-events: none; box-shadow: 1px 1px 4px rgba(0,0,0,.2); }
#tip b { word-break: break-all; }
#chart { width: 100%; height: 220px; border: 1px solid #ddd; cursor: crosshair; user-select: none; }
#chart .line { fill: none; stroke: #1565c0; stroke-width: 1.5; }
#chart .area { fill: #1565c0; fill-opacity: .12; }
#chart .peak { fill: #c62828; }
#chart text { font: 11px sans-serif; fill: #444; }
#chart .peaklabel { fill: #c62828; font-weight: bold; }
#chart .rss { fill: none; stroke: #ef6c00; stroke-width: 1.5; stroke-dasharray: 4 2; }
#chart .band { fill: #2e7d32; fill-opacity: .08; }
#chart .bandlabel { fill: #2e7d32; }
#chart .pstart { stroke: #2e7d32; stroke-width: 1; }
#chart .pend { stroke: #757575; stroke-width: 1; }
#chart .legend { font-weight: bold; }
#chart .cursor { stroke: #000; stroke-width: 1; }
#chart .sel { fill: #ffd54f; fill-opacity: .35; stroke: #f9a825; }
td.grew { color: #b71c1c; }
td.shrank { color: #0d47a1; }
#readout { font: 12px monospace; min-height: 16px; color: #333; }
table { border-collapse: collapse; font-size: 12px; margin: 4px 0 12px; }
th, td { border-bottom: 1px solid #e0e0e0; padding: 2px 8px; text-align: right; vertical-align: top; }
th { background: #f4f4f4; }
td.name { text-align: left; font-family: monospace; max-width: 640px; overflow-wrap: anywhere; }
td.where { text-align: left; color: #555; font-family: monospace; overflow-wrap: anywhere; }
#status, #scope { color: #555; }
</style>
</head>
<body>
<h1 id="title">memtrack report</h1>
<p id="summary"></p>
<section id="time">
<h2>Heap over time</h2>
<div class="controls">
  <span id="range">whole recording</span>
  <button id="clear-range">whole recording</button>
  <span>(drag on the chart to pick a time range)</span>
</div>
<svg id="chart" viewBox="0 0 1000 220" preserveAspectRatio="none"></svg>
<div id="readout"></div>
</section>
<h2>Flamegraph</h2>
<div class="controls">
  <button data-view="peak">live at the peak</button>
  <button data-view="leaked">leaked</button>
  <button data-view="allocated">allocated</button>
  <button data-view="allocations">allocations</button>
  <button data-view="temporary">temporary</button>
  <label><input id="inverted" type="checkbox"> inverted</label>
  <label id="diff-width" hidden><input id="width-base" type="checkbox"> widths by base</label>
  <select id="process"></select>
  <button id="reset">reset zoom</button>
  <input id="search" type="search" placeholder="search (regular expression)" size="32">
  <span id="status"></span>
</div>
<p id="scope"></p>
<div id="flame"></div>
<div id="tip"></div>
<h2>Totals</h2>
<table id="totals"></table>
<h2>Sites</h2>
<table id="sites"></table>
<section id="function-section">
<h2>Functions</h2>
<table id="functions"></table>
</section>
<section id="process-section">
<h2>Processes</h2>
<table id="processes"></table>
</section>
<script type="application/json" id="memtrack-data">)MTHTML";

const std::string_view kHtmlTail = R"MTHTML(</script>
<script>
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("memtrack-data").textContent);
  const $ = (id) => document.getElementById(id);
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  function human(v) {
    let i = 0;
    while (v >= 1024 && i + 1 < units.length) { v /= 1024; i++; }
    return (i ? v.toFixed(1) : String(v)) + " " + units[i];
  }
  function seconds(ns) { return (ns / 1e9).toFixed(3) + " s"; }
  const COUNTS = { allocations: true, temporary: true };  // views in calls, the others in bytes
  function amount(v, view) { return COUNTS[view] ? v + " calls" : human(v); }
  function pct(v, total) { return total ? (100 * v / total).toFixed(2) + " %" : "-"; }

  // --diff: each row's values b (BASE) and n (ARTIFACT) in the order of DV.
  const DIFF = data.diff || null;
  const DV = { peak: 0, leaked: 1, allocated: 2, allocations: 3 };
  const S = DIFF ? { frames: DIFF.frames, buckets: 1, bucket_ns: 1, list: [] } : data.series;
  const FR = S.frames;        // [name, where]
  const NB = Math.max(S.buckets, 1);
  const list = S.list;
  const state = { view: "peak", inverted: false, pid: null, range: null, zoom: [], pattern: null, widthBase: false };
  if (DIFF ? !DIFF.list.some((u) => u.b[0] || u.n[0]) : !list.some((u) => u.p > 0)) state.view = "leaked";
  // A change: "+9.8 KiB (+50.00 %)", "-3 calls"; "0" when none.
  function change(b, n, view) {
    const d = n - b;
    if (!d) return "0";
    return (d > 0 ? "+" : "-") + amount(Math.abs(d), view) + (b ? " (" + (d > 0 ? "+" : "") + (100 * d / b).toFixed(2) + " %)" : "");
  }
  function changeClass(b, n) { return n > b ? "grew" : n < b ? "shrank" : "same"; }

  if (DIFF) {
    const t = DIFF.base_title + " -> " + data.title;
    document.title = "memtrack report --diff: " + t;
    $("title").textContent = "memtrack report --diff: " + t;
    $("summary").textContent = "peak " + human(DIFF.base[0]) + " -> " + human(DIFF.now[0]) + " (" +
      change(DIFF.base[0], DIFF.now[0], "peak") + "), leaked " + human(DIFF.base[1]) + " -> " + human(DIFF.now[1]) +
      " (" + change(DIFF.base[1], DIFF.now[1], "leaked") + "), " + DIFF.base[3] + " -> " + DIFF.now[3] +
      " allocations, " + DIFF.changed_sites + " sites changed";
    for (const id of ["time", "process", "function-section", "process-section"]) $(id).hidden = true;
    document.querySelector("button[data-view=temporary]").hidden = true;
    $("diff-width").hidden = false;
  } else {
    document.title = "memtrack report: " + data.title;
    $("title").textContent = "memtrack report: " + data.title;
    $("summary").textContent = data.events + " events in " + seconds(data.duration_ns) + ": peak " +
      human(data.peak.bytes) + " in " + data.peak.blocks + " blocks at " + seconds(data.peak.time_ns) +
      ", leaked " + human(data.leaked.bytes) + " in " + data.leaked.blocks + " blocks, " + data.calls +
      " allocations of " + human(data.bytes) + ", " + data.temporary.calls + " temporary";
  }

  // ---- sums over the range and process picked ----
  const peakBucket = DIFF ? 0 : Math.min(Math.floor(data.peak.time_ns / S.bucket_ns), NB - 1);
  function shown(u) { return state.pid === null || u.pid === state.pid; }
  function compute() {
    if (DIFF) return computeDiff();
    const [b0, b1] = state.range || [0, NB - 1];
    const us = list.filter(shown);
    // Live at the peak: exact when the range holds the recording's peak and every process is
    // shown, else at the end of the range's fullest bucket.
    let exactPeak = state.pid === null && b0 <= peakBucket && peakBucket <= b1;
    let atBucket = -1;
    if (!exactPeak) {
      const diff = new Float64Array(NB + 1);
      for (const u of us) for (let i = 0; i < u.c.length; i += 8) diff[u.c[i]] += u.c[i + 2] - u.c[i + 3];
      let level = 0, best = -1;
      for (let b = 0; b <= b1; b++) {
        level += diff[b];
        if (b >= b0 && level > best) { best = level; atBucket = b; }
      }
    }
    const rows = [];
    const totals = { peak: 0, leaked: 0, leakedBlocks: 0, allocated: 0, allocations: 0, temporary: 0, temporaryBytes: 0 };
    for (const u of us) {
      const r = { u: u, peak: exactPeak ? u.p : 0, leaked: 0, leakedBlocks: 0, allocated: 0, allocations: 0,
                  temporary: 0, temporaryBytes: 0 };
      const c = u.c;
      for (let i = 0; i < c.length; i += 8) {
        const b = c[i];
        if (!exactPeak && b <= atBucket) r.peak += c[i + 2] - c[i + 3];
        if (b < b0 || b > b1) continue;
        r.allocations += c[i + 1]; r.allocated += c[i + 2];
        r.temporary += c[i + 4]; r.temporaryBytes += c[i + 5];
        r.leaked += c[i + 6]; r.leakedBlocks += c[i + 7];
      }
      for (const k in totals) totals[k] += r[k];
      rows.push(r);
    }
    return { rows: rows, totals: totals, exactPeak: exactPeak, atBucket: atBucket, b0: b0, b1: b1 };
  }

  // --diff: per row, base and now of every view, and the calls and bytes allocated in ARTIFACT.
  function computeDiff() {
    const rows = DIFF.list.map((u) => {
      const r = { u: u, base: {}, now: {}, allocations: u.n[3], allocated: u.n[2] };
      for (const k in DV) { r.base[k] = u.b[DV[k]]; r.now[k] = u.n[DV[k]]; }
      return r;
    });
    return { rows: rows };
  }
  // A row's amount in the view: with --diff, ARTIFACT's (or BASE's with "widths by base").
  function value(r) { return DIFF ? (state.widthBase ? r.base : r.now)[state.view] : r[state.view]; }

  // ---- the call tree of one view ----
  function tree(sum) {
    const root = { n: "all", v: 0, calls: 0, bytes: 0, b: 0, nw: 0, where: new Set(), c: new Map() };
    for (const r of sum.rows) {
      const v = value(r);
      // --diff: b and nw are BASE's and ARTIFACT's amounts under the node (a site gone from
      // ARTIFACT still colours its callers).
      const b = DIFF ? r.base[state.view] : 0, nw = DIFF ? r.now[state.view] : 0;
      if (!v && !b && !nw) continue;
      root.v += v; root.calls += r.allocations; root.bytes += r.allocated; root.b += b; root.nw += nw;
      const s = state.inverted ? r.u.s.slice().reverse() : r.u.s;
      let node = root;
      for (const id of s) {
        const [name, where] = FR[id];
        let next = node.c.get(name);
        if (!next) { next = { n: name, v: 0, calls: 0, bytes: 0, b: 0, nw: 0, where: new Set(), c: new Map(), up: node }; node.c.set(name, next); }
        next.v += v; next.calls += r.allocations; next.bytes += r.allocated; next.b += b; next.nw += nw;
        if (where && next.where.size < 4) next.where.add(where);
        node = next;
      }
    }
    return root;
  }
  function kids(n) { return Array.from(n.c.values()).sort((x, y) => y.v - x.v); }
  function depth(n) { let d = 0; for (const c of n.c.values()) d = Math.max(d, depth(c)); return d + 1; }

  // ---- drawing ----
  const ROW = 17;
  // --diff: red where the amount grew, blue where it shrank, deeper for a larger share of it.
  function diffColour(n) {
    const d = n.nw - n.b, t = Math.min(1, Math.abs(d) / Math.max(n.b, n.nw, 1));
    if (!d) return "hsl(0,0%,88%)";
    return "hsl(" + (d > 0 ? 0 : 220) + ",75%," + Math.round(88 - 38 * t) + "%)";
  }
  function hue(name) {
    let h = 0;
    for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
    return "hsl(" + (10 + h % 40) + "," + (60 + h % 30) + "%," + (55 + h % 15) + "%)";
  }
  const tip = $("tip");
  function showTip(e, n, root) {
    const where = n.where && n.where.size ? Array.from(n.where).join(", ") : "";
    tip.innerHTML = "";
    const b = document.createElement("b"); b.textContent = n.n; tip.appendChild(b);
    const lines = DIFF
      ? [where ? "at " + where : null,
         state.view + ": " + amount(n.b, state.view) + " -> " + amount(n.nw, state.view) + " (" + change(n.b, n.nw, state.view) + ")",
         "calls: " + n.calls + ", allocated " + human(n.bytes) + " in " + data.title]
      : [where ? "at " + where : null,
         state.view + ": " + amount(n.v, state.view) + " (" + pct(n.v, root.v) + " of " + amount(root.v, state.view) + ")",
         "calls: " + n.calls + ", allocated " + human(n.bytes) + " in the range"];
    for (const l of lines) if (l) { const d = document.createElement("div"); d.textContent = l; tip.appendChild(d); }
    tip.style.display = "block";
    tip.style.left = Math.min(e.clientX + 12, window.innerWidth - 320) + "px";
    tip.style.top = (e.clientY + 14) + "px";
  }
  function table(id, head, body) {
    const t = $(id);
    t.textContent = "";
    const h = t.createTHead().insertRow();
    for (const x of head) { const th = document.createElement("th"); th.textContent = x; h.appendChild(th); }
    const tb = t.createTBody();
    for (const row of body) {
      const tr = tb.insertRow();
      for (const [text, cls, title] of row) {
        const td = tr.insertCell();
        td.textContent = text;
        if (cls) td.className = cls;
        if (title) td.title = title;
      }
    }
  }

  let current = null;  // the last compute()
  function draw() {
    const sum = current;
    document.querySelectorAll(".controls button[data-view]").forEach(
      (b) => b.classList.toggle("on", b.dataset.view === state.view));
    const root = tree(sum);
    const flame = $("flame");
    flame.textContent = "";
    let scope = state.pid === null ? "all processes" : "process " + state.pid;
    if (DIFF) scope = DIFF.base_title + " -> " + data.title + ": widths by " + (state.widthBase ? "base" : "new") +
                      ", red grew, blue shrank";
    else {
    scope += ", " + (state.range ? seconds(sum.b0 * S.bucket_ns) + " to " + seconds((sum.b1 + 1) * S.bucket_ns) : "the whole recording");
    if (state.view === "peak")
      scope += sum.exactPeak ? ": live at the peak, " + seconds(data.peak.time_ns)
                             : ": live at " + seconds((sum.atBucket + 1) * S.bucket_ns) +
                               ", the end of the range's fullest bucket of " + seconds(S.bucket_ns);
    if (state.view === "leaked") scope += ": leaked blocks made in the range";
    if (state.view === "temporary") scope += ": temporary allocations freed in the range";
    }
    $("scope").textContent = scope + (state.inverted ? " (inverted: allocating functions at the top)" : "");
    if (!root.v) { flame.style.height = "24px"; flame.textContent = "nothing for this view"; $("status").textContent = ""; }
    else drawFlame(root, flame);
    drawTables(sum, root);
  }
  function drawFlame(root, flame) {
    // The zoomed node, found again by its path of names (the tree is rebuilt on every change).
    let top = root;
    const above = [root];
    for (const name of state.zoom) {
      const next = top.c.get(name);
      if (!next) break;
      top = next; above.push(top);
    }
    if (top === root) state.zoom = [];
    const width = flame.clientWidth || 1000;
    flame.style.height = Math.max((above.length - 1 + depth(top)) * ROW, ROW) + "px";
    function path(n) { const p = []; for (; n.up; n = n.up) p.unshift(n.n); return p; }
    function box(n, x, w, row, dim) {
      if (w < 1) return false;
      const d = document.createElement("div");
      d.className = "fg" + (dim ? " dim" : "") + (DIFF ? " " + changeClass(n.b, n.nw) : "");
      d.style.left = x + "px"; d.style.width = w + "px"; d.style.top = row * ROW + "px";
      d.style.background = DIFF ? diffColour(n) : n.n === "[other sites]" ? "#bbb" : hue(n.n);
      d.textContent = n.n;
      if (state.pattern && state.pattern.test(n.n)) d.classList.add("match");
      d.onclick = () => { state.zoom = n === top && n !== root ? [] : path(n); draw(); };
      d.onmousemove = (e) => showTip(e, n, root);
      d.onmouseleave = () => { tip.style.display = "none"; };
      flame.appendChild(d);
      return true;
    }
    above.forEach((n, i) => { if (i < above.length - 1) box(n, 0, width, i, true); });
    (function layout(n, x, w, row) {
      if (!box(n, x, w, row, false)) return;
      let cx = x;
      for (const c of kids(n)) {
        const cw = w * c.v / n.v;
        layout(c, cx, cw, row + 1);
        cx += cw;
      }
    })(top, 0, width, above.length - 1);
    let matched = 0;
    (function count(n) {
      if (state.pattern && n !== root && state.pattern.test(n.n)) { matched += n.v; return; }
      for (const c of n.c.values()) count(c);
    })(root);
    $("status").textContent = state.pattern ? "matched " + amount(matched, state.view) + " (" + pct(matched, root.v) + ")" : "";
  }
  // The frames of a row, root first, and its stack as one text (a cell's title).
  function stackText(r) {
    return r.u.s.map((id) => FR[id]).reverse().map((f) => f[0] + (f[1] ? " (" + f[1] + ")" : "")).join("\n");
  }
  function drawDiffTables() {
    const names = { peak: "live at the peak", leaked: "leaked", allocated: "allocated", allocations: "allocations" };
    table("totals", ["view", "base", "new", "change"], Object.keys(DV).map((k) => {
      const b = DIFF.base[DV[k]], n = DIFF.now[DV[k]];
      return [[names[k], "name"], [amount(b, k)], [amount(n, k)], [change(b, n, k), changeClass(b, n)]];
    }));
    const view = state.view;
    const changed = current.rows.filter((r) => r.base[view] !== r.now[view])
      .sort((x, y) => Math.abs(y.now[view] - y.base[view]) - Math.abs(x.now[view] - x.base[view]));
    table("sites", ["#", "base", "new", "change", "function", "at"], changed.slice(0, 50).map((r, i) => {
      const leaf = FR[r.u.s[r.u.s.length - 1]];
      return [[String(i + 1)], [amount(r.base[view], view)], [amount(r.now[view], view)],
              [change(r.base[view], r.now[view], view), changeClass(r.base[view], r.now[view])],
              [leaf[0], "name", stackText(r)], [leaf[1], "where"]];
    }));
  }
  function drawTables(sum, root) {
    if (DIFF) return drawDiffTables();
    const t = sum.totals;
    table("totals", ["view", "amount", "blocks or calls"], [
      [["live at the peak", "name"], [human(t.peak)], [""]],
      [["leaked", "name"], [human(t.leaked)], [String(t.leakedBlocks)]],
      [["allocated", "name"], [human(t.allocated)], [String(t.allocations)]],
      [["temporary", "name"], [human(t.temporaryBytes)], [String(t.temporary)]]]);
    const view = state.view;
    const sites = sum.rows.filter((r) => r[view] > 0).sort((x, y) => y[view] - x[view]).slice(0, 50);
    table("sites", ["#", view, "share", "calls", "allocated", "process", "function", "at"], sites.map((r, i) => {
      const leaf = FR[r.u.s[r.u.s.length - 1]];
      return [[String(i + 1)], [amount(r[view], view)], [pct(r[view], root.v)], [String(r.allocations)],
              [human(r.allocated)], [String(r.u.pid)], [leaf[0], "name", stackText(r)], [leaf[1], "where"]];
    }));
    // Functions: each counted once per stack it is in (inclusive), and as the stack's last (self).
    const fns = new Map();
    for (const r of sum.rows) {
      const v = r[view];
      if (!v) continue;
      const seen = new Set();
      r.u.s.forEach((id, i) => {
        const name = FR[id][0];
        let f = fns.get(name);
        if (!f) { f = { name: name, total: 0, self: 0, calls: 0 }; fns.set(name, f); }
        if (!seen.has(name)) { seen.add(name); f.total += v; f.calls += r.allocations; }
        if (i === r.u.s.length - 1) f.self += v;
      });
    }
    const top = Array.from(fns.values()).sort((x, y) => y.total - x.total || y.self - x.self).slice(0, 50);
    table("functions", ["function", view + " (inclusive)", "share", "self", "calls"], top.map((f) =>
      [[f.name, "name"], [amount(f.total, view)], [pct(f.total, root.v)], [amount(f.self, view)], [String(f.calls)]]));
  }

  // ---- controls ----
  function recompute() { current = compute(); draw(); }
  document.querySelectorAll(".controls button[data-view]").forEach((b) => {
    b.onclick = () => { state.view = b.dataset.view; state.zoom = []; draw(); };
  });
  $("inverted").onchange = (e) => { state.inverted = e.target.checked; state.zoom = []; draw(); };
  $("width-base").onchange = (e) => { state.widthBase = e.target.checked; state.zoom = []; draw(); };
  $("reset").onclick = () => { state.zoom = []; draw(); };
  $("search").oninput = (e) => {
    try { state.pattern = e.target.value ? new RegExp(e.target.value) : null; } catch (err) { state.pattern = null; }
    draw();
  };
  const select = $("process");
  select.add(new Option("all processes", ""));
  for (const p of data.processes || []) select.add(new Option(p.pid + (p.command ? " " + p.command.slice(0, 60) : ""), String(p.pid)));
  select.onchange = () => { state.pid = select.value === "" ? null : Number(select.value); state.zoom = []; recompute(); };
  table("processes", ["pid", "command", "start", "end", "status"], (data.processes || []).map((p) =>
    [[String(p.pid)], [p.command || "", "name"], [p.start_ns === null ? "" : seconds(p.start_ns)],
     [p.end_ns === null ? "" : seconds(p.end_ns)], [p.status || ""]]));
  window.addEventListener("resize", draw);

  // ---- heap over time: hover reads it, a drag picks the range ----
  // (none with --diff: it has no time)
  if (!DIFF) (function chart() {
    const svg = $("chart");
    const NS = "http://www.w3.org/2000/svg";
    function el(name, attrs, text) {
      const e = document.createElementNS(NS, name);
      for (const k in attrs) e.setAttribute(k, attrs[k]);
      if (text !== undefined) e.textContent = text;
      svg.appendChild(e);
      return e;
    }
    const pts = data.timeline;
    const rss = data.rss || [];
    const W = 1000, H = 220, L = 60, B = 20, T = 20;
    const ends = [pts.length ? pts[pts.length - 1].time_ns + data.timeline_bucket_ns : 1, data.peak.time_ns,
                  data.duration_ns, 1];
    if (rss.length) ends.push(rss[rss.length - 1].time_ns + data.rss_bucket_ns);
    const tmax = Math.max(...ends);
    const ymax = Math.max(data.peak.bytes, ...rss.map((p) => p.bytes), 1);
    const X = (t) => L + (W - L - 10) * Math.min(t, tmax) / tmax;
    const Y = (v) => H - B - (H - B - T) * v / ymax;
    svg.setAttribute("data-tmax", tmax);  // for tests: where a time is on the chart
    const timeAt = (x) => Math.max(0, Math.min(tmax, (x - L) * tmax / (W - L - 10)));
    for (const w of data.windows || []) {
      const x0 = X(w.start_ns), x1 = X(w.end_ns === null ? tmax : w.end_ns);
      el("rect", { x: x0, y: T, width: Math.max(x1 - x0, 1), height: H - B - T, class: "band" });
      el("text", { x: x0 + 2, y: T + 12, class: "bandlabel" }, "#" + w.number + (w.name ? " " + w.name : ""));
    }
    function steps(series, bucket) {
      let path = "M" + X(0) + "," + Y(0);
      for (const p of series) path += " L" + X(p.time_ns) + "," + Y(p.bytes) + " L" + X(p.time_ns + bucket) + "," + Y(p.bytes);
      return path;
    }
    const d = steps(pts, data.timeline_bucket_ns);
    el("path", { d: d + " L" + X(tmax) + "," + Y(0) + " Z", class: "area" });
    el("path", { d: d, class: "line" });
    if (rss.length) el("path", { d: steps(rss, data.rss_bucket_ns), class: "rss" });
    for (const p of data.processes) {
      if (p.start_ns === null) continue;
      el("line", { x1: X(p.start_ns), x2: X(p.start_ns), y1: H - B, y2: H - B - 8, class: "pstart" });
      if (p.end_ns !== null) el("line", { x1: X(p.end_ns), x2: X(p.end_ns), y1: H - B, y2: H - B - 8, class: "pend" });
    }
    el("text", { x: 2, y: T + 4 }, human(ymax));
    el("text", { x: 2, y: H - B }, "0");
    el("text", { x: L, y: H - 4 }, "0 s");
    el("text", { x: W - 70, y: H - 4 }, seconds(tmax));
    if (rss.length) el("text", { x: W - 260, y: H - 4, class: "legend" }, "heap (blue), RSS (orange)");
    el("circle", { cx: X(data.peak.time_ns), cy: Y(data.peak.bytes), r: 5, class: "peak" });
    el("text", { x: Math.min(X(data.peak.time_ns) + 8, W - 220), y: T - 6 + 12, class: "peaklabel" },
       "peak " + human(data.peak.bytes) + " at " + seconds(data.peak.time_ns));
    const sel = el("rect", { x: 0, y: T, width: 0, height: H - B - T, class: "sel", visibility: "hidden" });
    const cursor = el("line", { x1: 0, x2: 0, y1: T, y2: H - B, class: "cursor", visibility: "hidden" });
    // The level at `t`: the last point of `series` at or before it (both series are steps).
    function at(series, t) {
      let lo = 0, hi = series.length - 1, found = null;
      while (lo <= hi) {
        const mid = (lo + hi) >> 1;
        if (series[mid].time_ns <= t) { found = series[mid]; lo = mid + 1; } else hi = mid - 1;
      }
      return found;
    }
    function chartX(e) { const r = svg.getBoundingClientRect(); return (e.clientX - r.left) * W / r.width; }
    let dragFrom = null;
    svg.addEventListener("mousemove", (e) => {
      const x = Math.max(L, Math.min(W - 10, chartX(e)));
      const t = timeAt(x);
      cursor.setAttribute("x1", x); cursor.setAttribute("x2", x); cursor.setAttribute("visibility", "visible");
      const h = at(pts, t), r = at(rss, t);
      $("readout").textContent = seconds(t) + ": heap " + (h ? human(h.bytes) : "0 B") +
        (rss.length ? ", RSS " + (r ? human(r.bytes) : "-") : "");
      if (dragFrom !== null) {
        sel.setAttribute("x", Math.min(dragFrom, x)); sel.setAttribute("width", Math.abs(x - dragFrom));
        sel.setAttribute("visibility", "visible");
      }
    });
    svg.addEventListener("mouseleave", () => { cursor.setAttribute("visibility", "hidden"); });
    svg.addEventListener("mousedown", (e) => { dragFrom = Math.max(L, Math.min(W - 10, chartX(e))); e.preventDefault(); });
    window.addEventListener("mouseup", (e) => {
      if (dragFrom === null) return;
      const x = Math.max(L, Math.min(W - 10, chartX(e)));
      const x0 = Math.min(dragFrom, x), x1 = Math.max(dragFrom, x);
      dragFrom = null;
      if (x1 - x0 < 3) { if (!state.range) sel.setAttribute("visibility", "hidden"); return; }
      const b0 = Math.min(NB - 1, Math.floor(timeAt(x0) / S.bucket_ns));
      const b1 = Math.min(NB - 1, Math.max(b0, Math.ceil(timeAt(x1) / S.bucket_ns) - 1));
      setRange([b0, b1]);
    });
    function setRange(range) {
      state.range = range;
      state.zoom = [];
      if (range) {
        const x0 = X(range[0] * S.bucket_ns), x1 = X((range[1] + 1) * S.bucket_ns);
        sel.setAttribute("x", x0); sel.setAttribute("width", Math.max(x1 - x0, 1)); sel.setAttribute("visibility", "visible");
        $("range").textContent = "range " + seconds(range[0] * S.bucket_ns) + " to " + seconds((range[1] + 1) * S.bucket_ns);
      } else {
        sel.setAttribute("visibility", "hidden");
        $("range").textContent = "whole recording";
      }
      recompute();
    }
    $("clear-range").onclick = () => setRange(null);
  })();

  recompute();
  // ms from the start of the navigation to the page drawn (scripts/bench.sh --html reads it).
  document.body.setAttribute("data-rendered-ms", Math.round(performance.now()));
  document.body.setAttribute("data-rendered", "yes");
})();
</script>
</body>
</html>
)MTHTML";

}  // namespace memtrack::report
