#include "report/HtmlPage.hpp"

namespace memtrack::report {

const std::string_view kHtmlHead = R"MTHTML(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>memtrack report</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 16px 24px; color: #222; background: #fff; }
h1 { font-size: 20px; margin: 0 0 8px; }
h2 { font-size: 16px; margin: 24px 0 8px; }
#summary { margin: 0 0 8px; }
.controls { margin: 8px 0; display: flex; gap: 8px; align-items: center; flex-wrap: wrap; }
.controls button.on { background: #333; color: #fff; }
#flame { position: relative; width: 100%; overflow: hidden; border: 1px solid #ddd; }
.fg { position: absolute; height: 17px; box-sizing: border-box; border: 1px solid #fff; overflow: hidden;
      white-space: nowrap; font: 11px/15px monospace; padding: 0 3px; cursor: pointer; }
.fg:hover { border-color: #000; }
.fg.match { background: #e040fb !important; }
.fg.dim { opacity: .45; }
#chart { width: 100%; height: 220px; border: 1px solid #ddd; }
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
pre { background: #f6f6f6; padding: 8px; overflow-x: auto; font-size: 12px; }
#status { color: #555; }
</style>
</head>
<body>
<h1 id="title">memtrack report</h1>
<p id="summary"></p>
<h2>Flamegraph</h2>
<div class="controls">
  <button data-cost="peak">live at the peak</button>
  <button data-cost="leaked">leaked</button>
  <button data-cost="allocated">allocated</button>
  <button id="reset">reset zoom</button>
  <input id="search" type="search" placeholder="search (regular expression)" size="32">
  <span id="status"></span>
</div>
<div id="flame"></div>
<h2>Heap over time</h2>
<svg id="chart" viewBox="0 0 1000 220" preserveAspectRatio="none"></svg>
<h2>Report</h2>
<pre id="text"></pre>
<script type="application/json" id="memtrack-data">)MTHTML";

const std::string_view kHtmlTail = R"MTHTML(</script>
<script>
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("memtrack-data").textContent);
  const $ = (id) => document.getElementById(id);
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  function human(v, cost) {
    if (cost === "allocations") return v + " calls";
    let i = 0;
    while (v >= 1024 && i + 1 < units.length) { v /= 1024; i++; }
    return (i ? v.toFixed(1) : v) + " " + units[i];
  }
  function seconds(ns) { return (ns / 1e9).toFixed(3) + " s"; }

  document.title = "memtrack report: " + data.title;
  $("title").textContent = "memtrack report: " + data.title;
  $("summary").textContent = "peak " + human(data.peak.bytes) + " at " + seconds(data.peak.time_ns) +
    ", leaked " + human(data.leaked.bytes) + " in " + data.leaked.blocks + " blocks, " +
    data.calls + " allocations";
  $("text").textContent = data.text;

  // ---- flamegraph: root at the top, click to zoom, search ----
  const ROW = 17;
  let cost = data.flame.peak.v > 0 ? "peak" : "leaked";
  let zoom = null;      // the node shown at full width
  let pattern = null;   // the search's RegExp
  function hue(name) {
    let h = 0;
    for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
    return "hsl(" + (10 + h % 40) + "," + (60 + h % 30) + "%," + (55 + h % 15) + "%)";
  }
  function parents(root, target) {
    const path = [];
    (function walk(n) {
      path.push(n);
      if (n === target) return true;
      for (const c of n.c || []) if (walk(c)) return true;
      path.pop();
      return false;
    })(root);
    return path;
  }
  function depth(n) { let d = 0; for (const c of n.c || []) d = Math.max(d, depth(c)); return d + 1; }
  function draw() {
    const root = data.flame[cost];
    const flame = $("flame");
    flame.textContent = "";
    document.querySelectorAll(".controls button[data-cost]").forEach(
      (b) => b.classList.toggle("on", b.dataset.cost === cost));
    if (!root.v) { flame.style.height = "24px"; flame.textContent = "nothing for this cost"; return; }
    const top = zoom || root;
    const above = parents(root, top);  // root .. top
    const width = flame.clientWidth || 1000;
    const rows = above.length - 1 + depth(top);
    flame.style.height = Math.max(rows * ROW, ROW) + "px";
    let matched = 0;
    function box(n, x, w, row, dim) {
      if (w < 1) return;
      const d = document.createElement("div");
      d.className = "fg" + (dim ? " dim" : "");
      d.style.left = x + "px"; d.style.width = w + "px"; d.style.top = row * ROW + "px";
      d.style.background = n.n === "other" ? "#bbb" : hue(n.n);
      d.textContent = n.n;
      d.title = n.n + " (" + human(n.v, cost) + ", " + (100 * n.v / root.v).toFixed(2) + " %)";
      if (pattern && pattern.test(n.n)) d.classList.add("match");
      d.onclick = () => { zoom = n === top && n !== root ? null : n; draw(); };
      flame.appendChild(d);
    }
    above.forEach((n, i) => { if (i < above.length - 1) box(n, 0, width, i, true); });
    (function layout(n, x, w, row) {
      box(n, x, w, row, false);
      let cx = x;
      for (const c of n.c || []) {
        const cw = w * c.v / n.v;
        layout(c, cx, cw, row + 1);
        cx += cw;
      }
    })(top, 0, width, above.length - 1);
    (function count(n) {
      if (pattern && pattern.test(n.n)) { matched += n.v; return; }
      for (const c of n.c || []) count(c);
    })(root);
    $("status").textContent = pattern ? "matched " + human(matched, cost) + " (" +
      (100 * matched / root.v).toFixed(2) + " %)" : "";
  }
  document.querySelectorAll(".controls button[data-cost]").forEach((b) => {
    b.onclick = () => { cost = b.dataset.cost; zoom = null; draw(); };
  });
  $("reset").onclick = () => { zoom = null; draw(); };
  $("search").oninput = (e) => {
    try { pattern = e.target.value ? new RegExp(e.target.value) : null; } catch (err) { pattern = null; }
    draw();
  };
  window.addEventListener("resize", draw);
  draw();

  // ---- heap over time, the peak marked ----
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
  const windows = data.windows || [];
  const procs = data.processes || [];
  const W = 1000, H = 220, L = 60, B = 20, T = 20;
  const ends = [pts.length ? pts[pts.length - 1].time_ns + data.timeline_bucket_ns : 1, data.peak.time_ns, 1];
  if (rss.length) ends.push(rss[rss.length - 1].time_ns + data.rss_bucket_ns);
  const tmax = Math.max(...ends);
  const ymax = Math.max(data.peak.bytes, ...rss.map((p) => p.bytes), 1);
  const X = (t) => L + (W - L - 10) * Math.min(t, tmax) / tmax;
  const Y = (v) => H - B - (H - B - T) * v / ymax;
  // Windows (enable..disable, mark spans) as bands behind the curves.
  for (const w of windows) {
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
  // Process starts (green) and ends (grey) as ticks along the time axis.
  for (const p of procs) {
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
  document.body.setAttribute("data-rendered", "yes");
})();
</script>
</body>
</html>
)MTHTML";

}  // namespace memtrack::report
