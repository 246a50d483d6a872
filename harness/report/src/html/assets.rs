//! The page's inline style and script. Plain JavaScript, no framework, nothing fetched.

/// The style sheet.
pub(crate) const CSS: &str = r#"
:root { --fg: #1d2330; --muted: #5b6475; --line: #d9dde5; --bg: #ffffff; --band: #f5f7fa; --accent: #4e79a7; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
header { padding: 18px 28px 10px; border-bottom: 1px solid var(--line); background: var(--band); }
h1 { font-size: 20px; margin: 0 0 6px; }
h2 { font-size: 17px; margin: 26px 0 8px; }
h3 { font-size: 15px; margin: 0; }
h4 { font-size: 13px; margin: 10px 0 4px; color: var(--muted); }
p.sub { margin: 2px 0; color: var(--muted); }
main { padding: 6px 28px 40px; max-width: 1280px; }
ul.lines { padding-left: 18px; font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 13px; }
.table-block { margin: 14px 0 18px; }
.table-head { display: flex; gap: 12px; align-items: baseline; flex-wrap: wrap; margin-bottom: 6px; }
.table-head h2 { margin: 26px 0 8px; }
input.filter, input.group-filter { font: inherit; padding: 3px 8px; border: 1px solid var(--line); border-radius: 4px; min-width: 220px; }
.count { color: var(--muted); font-size: 12px; }
.scroll { overflow-x: auto; max-height: 640px; overflow-y: auto; border: 1px solid var(--line); border-radius: 4px; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { padding: 4px 10px; border-bottom: 1px solid var(--line); text-align: right; white-space: nowrap; vertical-align: top; }
th:first-child, td:first-child { text-align: left; }
td.left, th.left { text-align: left; }
td.text, th.text { text-align: left; white-space: normal; min-width: 240px; max-width: 560px; }
thead th { position: sticky; top: 0; z-index: 2; background: var(--band); cursor: pointer; user-select: none; }
/* The first column (the arm, policy or session) stays in view when a wide table scrolls. */
tbody td:first-child { position: sticky; left: 0; z-index: 1; background: var(--bg); box-shadow: inset -1px 0 0 var(--line); }
thead th:first-child { position: sticky; left: 0; z-index: 3; box-shadow: inset -1px 0 0 var(--line); }
th[aria-sort="ascending"]::after { content: " ▲"; font-size: 10px; }
th[aria-sort="descending"]::after { content: " ▼"; font-size: 10px; }
tbody tr:nth-child(even), tbody tr:nth-child(even) td:first-child { background: #fafbfc; }
tbody tr:hover, tbody tr:hover td:first-child { background: #eef3fa; }
article.group { border: 1px solid var(--line); border-radius: 6px; padding: 12px 16px; margin: 12px 0; }
p.facts { margin: 3px 0; color: var(--muted); font-size: 13px; }
figure.chart { margin: 8px 0; }
figure.chart > svg { width: 100%; max-width: 900px; height: auto; display: block; }
svg .grid { stroke: #e6e9ef; stroke-width: 1; }
svg .axis { stroke: #7d8596; stroke-width: 1; }
svg .tick { font-size: 11px; fill: #5b6475; }
svg .label { font-size: 12px; fill: #1d2330; }
figcaption.legend { display: flex; flex-wrap: wrap; gap: 14px; font-size: 13px; }
.key svg.swatch { margin-right: 6px; vertical-align: middle; }
.key small { color: var(--muted); }
details.drill { margin-top: 6px; }
details.drill > summary { cursor: pointer; color: var(--accent); font-weight: 600; }
.drill-body { padding: 4px 0 0 14px; border-left: 3px solid var(--line); margin-top: 6px; }
details.pre { margin: 4px 0; }
details.pre > summary { cursor: pointer; font-size: 13px; color: var(--muted); }
.pre pre { background: var(--band); border: 1px solid var(--line); border-radius: 4px; padding: 8px 10px; white-space: pre-wrap; word-break: break-word; max-height: 360px; overflow: auto; font-size: 12px; }
.hidden { display: none; }
"#;

/// The script: sortable headers and filter boxes for every table, a filter for the groups, and
/// cells of long text marked so they wrap.
pub(crate) const JS: &str = r#"
(function () {
  "use strict";
  function value(text) {
    // A number, possibly with a unit or a share after it: "1,945", "0.62×", "4 (100.0%)".
    var t = text.trim().replace(/\s*\([^)]*\)$/, "").replace(/[,\u00d7%$\s]/g, "").replace(/^\u00b1/, "").replace(/\u2212/g, "-");
    var m = t.match(/^[-+]?\d+(\.\d+)?/);
    if (m && m[0].length >= t.length - 2) { return parseFloat(m[0]); }
    return null;
  }
  function compare(a, b) {
    var x = value(a), y = value(b);
    if (x !== null && y !== null) { return x - y; }
    if (x !== null) { return -1; }
    if (y !== null) { return 1; }
    return a.localeCompare(b);
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    var heads = table.querySelectorAll("thead th");
    heads.forEach(function (th, col) {
      th.addEventListener("click", function () {
        var down = th.getAttribute("aria-sort") === "ascending";
        heads.forEach(function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", down ? "descending" : "ascending");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (r1, r2) {
          var c = compare(r1.cells[col].textContent, r2.cells[col].textContent);
          return down ? -c : c;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
    // Numbers stay right-aligned; words go left, long text wraps.
    Array.prototype.forEach.call(table.tBodies[0].rows, function (r, k) {
      Array.prototype.forEach.call(r.cells, function (c) {
        var t = c.textContent;
        if (t.trim() !== "" && value(t) === null) {
          c.classList.add("left");
          if (k === 0 && heads[c.cellIndex]) { heads[c.cellIndex].classList.add("left"); }
        }
        if (t.length > 60) {
          c.classList.add("text");
          if (heads[c.cellIndex]) { heads[c.cellIndex].classList.add("text"); }
        }
      });
    });
  });
  document.querySelectorAll(".table-block").forEach(function (block) {
    var input = block.querySelector("input.filter");
    var count = block.querySelector(".count");
    var rows = block.querySelectorAll("tbody tr");
    input.addEventListener("input", function () {
      var q = input.value.trim().toLowerCase(), shown = 0;
      rows.forEach(function (r) {
        var hit = q === "" || r.textContent.toLowerCase().indexOf(q) >= 0;
        r.classList.toggle("hidden", !hit);
        if (hit) { shown += 1; }
      });
      count.textContent = shown + " of " + rows.length + " rows";
    });
  });
  document.querySelectorAll("section.groups").forEach(function (sec) {
    var input = sec.querySelector("input.group-filter");
    var count = sec.querySelector(".count");
    var groups = sec.querySelectorAll("article.group");
    input.addEventListener("input", function () {
      var q = input.value.trim().toLowerCase(), shown = 0;
      groups.forEach(function (g) {
        var hit = q === "" || g.getAttribute("data-title").toLowerCase().indexOf(q) >= 0;
        g.classList.toggle("hidden", !hit);
        if (hit) { shown += 1; }
      });
      count.textContent = shown + " of " + groups.length + " shown";
    });
  });
})();
"#;
