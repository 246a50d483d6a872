// Opens foldbench's HTML pages in headless Chromium as a person would: from file://, no network.
// Fails on any console error, page error or request that is not file:// ; checks that every
// chart has exactly one line per policy; checks the cost–loss frontier chart (a point per arm,
// the frontier line, the sweeps' lines, labels that name every arm once and do not overlap);
// sorts and filters the first table; checks that the first column of a wide table stays in view
// when it scrolls; opens a drill-down; saves screenshots (the frontier chart's apart).
//
// usage: node tests/html-check.cjs PLAYWRIGHT_CORE_DIR CHROMIUM OUT_DIR NAME=FILE.html[=POLICY,POLICY...] ...
"use strict";
const path = require("path");
const fs = require("fs");

const [pwDir, chromium, outDir, ...pages] = process.argv.slice(2);
const { chromium: browserType } = require(path.resolve(pwDir, "node_modules", "playwright-core"));

function fail(msg) {
  console.error("html-check: FAIL: " + msg);
  process.exitCode = 1;
}

async function check(ctx, name, file, policies) {
  const page = await ctx.newPage();
  const problems = [];
  page.on("console", (m) => { if (m.type() === "error") problems.push("console error: " + m.text()); });
  page.on("pageerror", (e) => problems.push("page error: " + e.message));
  page.on("request", (r) => { if (!r.url().startsWith("file://")) problems.push("network request: " + r.url()); });
  await page.goto("file://" + path.resolve(file), { waitUntil: "load" });

  // Charts: one line per policy, each policy once.
  const charts = await page.$$eval("figure.chart", (figs) => figs.map((f) =>
    Array.from(f.querySelectorAll("polyline.series")).map((p) => p.getAttribute("data-policy"))));
  if (policies) {
    if (charts.length === 0) problems.push("no chart on the page");
    charts.forEach((got, i) => {
      const want = policies.slice().sort().join(",");
      if (got.slice().sort().join(",") !== want) {
        problems.push(`chart ${i + 1}: series [${got}] but the policies are [${policies}]`);
      }
    });
  }

  // The cost–loss frontier (run and replay pages): one point per arm, the frontier line through
  // the points marked on it, one dashed line per sweep (`polyline.sweep`, `data-sweep` its
  // policy, apart from the request charts' `polyline.series` with `data-policy`), every arm
  // named in exactly one label, and no two labels overlapping.
  if (policies) {
    const f = await page.evaluate(() => {
      const fig = document.querySelector("figure.frontier");
      if (!fig) return null;
      const svg = fig.querySelector("svg").getBoundingClientRect();
      const dots = Array.from(fig.querySelectorAll("circle.arm")).map((c) => ({
        arm: c.getAttribute("data-arm"), on: c.getAttribute("data-frontier") === "true",
        at: c.getAttribute("cx") + "," + c.getAttribute("cy"),
      }));
      const split = (pts) => (pts || "").trim().split(/\s+/).filter((x) => x);
      const count = (pts) => split(pts).length;
      const line = fig.querySelector("polyline.frontier-line");
      const labels = Array.from(fig.querySelectorAll("text.arm-label")).map((t) => {
        const r = t.getBoundingClientRect();
        return { arms: Array.from(t.querySelectorAll("tspan[data-arm]")).map((x) => x.getAttribute("data-arm")),
          l: r.left, t: r.top, r: r.right, b: r.bottom };
      });
      return {
        points: Number(fig.getAttribute("data-points")), dots,
        line: line ? split(line.getAttribute("points")) : null,
        sweeps: Array.from(fig.querySelectorAll("polyline.sweep")).map((p) => ({ policy: p.getAttribute("data-sweep"), n: count(p.getAttribute("points")) })),
        series: fig.querySelectorAll("polyline.series").length,
        misplaced: document.querySelectorAll("figure.chart polyline.sweep").length,
        labels, svg: { l: svg.left, t: svg.top, r: svg.right, b: svg.bottom },
      };
    });
    if (!f) {
      problems.push("no frontier chart");
    } else {
      const arms = f.dots.map((d) => d.arm);
      if (arms.slice().sort().join(",") !== policies.slice().sort().join(",") || f.points !== policies.length) {
        problems.push(`frontier: points [${arms}] (data-points ${f.points}) but the arms are [${policies}]`);
      }
      // The line goes through every point marked on the frontier, and through no other.
      const on = f.dots.filter((d) => d.on).map((d) => d.at).sort();
      if (on.length === 0) problems.push("frontier: no point marked on it");
      if (!f.line) problems.push("frontier: no frontier line");
      else if (f.line.slice().sort().join(" ") !== on.join(" ")) {
        problems.push(`frontier: its line runs through [${f.line}], the points on the frontier are at [${on}]`);
      }
      const family = (a) => a.split(":")[0];
      const families = {};
      for (const a of policies) families[family(a)] = (families[family(a)] || 0) + 1;
      const want = Object.entries(families).filter(([, n]) => n > 1);
      const got = f.sweeps.map((w) => `${w.policy}:${w.n}`).sort().join(",");
      if (got !== want.map(([k, n]) => `${k}:${n}`).sort().join(",")) {
        problems.push(`frontier: sweep lines [${got}] but the sweeps are [${want.map(([k, n]) => `${k}:${n}`)}]`);
      }
      if (f.series !== 0 || f.misplaced !== 0) problems.push("frontier: sweep and series lines mixed up");
      const named = f.labels.flatMap((l) => l.arms).sort().join(",");
      if (named !== policies.slice().sort().join(",")) problems.push(`frontier: labels name [${named}], the arms are [${policies}]`);
      f.labels.forEach((a, i) => {
        if (a.l < f.svg.l - 1 || a.r > f.svg.r + 1 || a.t < f.svg.t - 1 || a.b > f.svg.b + 1) {
          problems.push(`frontier: the label of [${a.arms}] leaves the chart`);
        }
        for (const b of f.labels.slice(i + 1)) {
          if (a.l < b.r && b.l < a.r && a.t < b.b && b.t < a.b) problems.push(`frontier: the labels of [${a.arms}] and [${b.arms}] overlap`);
        }
      });
      const fig = page.locator("figure.frontier");
      await fig.scrollIntoViewIfNeeded();
      await fig.screenshot({ path: path.join(outDir, `${name}-frontier.png`) });
    }
  }

  // Sorting and filtering: the first table.
  const table = page.locator(".table-block").first();
  const head = table.locator("thead th").nth(1);
  await head.click();
  if ((await head.getAttribute("aria-sort")) !== "ascending") problems.push("a header click did not sort");
  await head.click();
  if ((await head.getAttribute("aria-sort")) !== "descending") problems.push("a second click did not reverse the sort");
  const rows = await table.locator("tbody tr").count();
  await table.locator("input.filter").fill("zz-no-row-has-this-zz");
  const visible = await table.locator("tbody tr:not(.hidden)").count();
  if (rows > 0 && visible !== 0) problems.push(`the filter left ${visible} of ${rows} rows`);
  await table.locator("input.filter").fill("");
  if ((await table.locator("tbody tr:not(.hidden)").count()) !== rows) problems.push("clearing the filter did not bring the rows back");

  await page.screenshot({ path: path.join(outDir, `${name}.png`) });

  // The first column stays in view when a wide table scrolls: on a narrow window, scroll the
  // first table wider than its box and check its first cell is still at the box's left edge.
  await page.setViewportSize({ width: 640, height: 900 });
  const sticky = await page.evaluate(() => {
    const box = Array.from(document.querySelectorAll(".scroll")).find((b) => b.scrollWidth > b.clientWidth + 50);
    if (!box) { return { wide: false }; }
    const cell = box.querySelector("tbody tr td");
    box.scrollLeft = box.scrollWidth;
    const d = Math.abs(cell.getBoundingClientRect().left - box.getBoundingClientRect().left);
    box.scrollLeft = 0;
    return { wide: true, d };
  });
  if (sticky.wide && sticky.d > 2) problems.push(`the first column scrolled away (${sticky.d}px from the table's left edge)`);
  if (!sticky.wide && policies) problems.push("no table is wider than a 640-pixel window: the sticky column was not checked");
  await page.setViewportSize({ width: 1280, height: 900 });

  // The drill-down of the group with the most marks (a fold or a compaction), else the first.
  const groups = page.locator("article.group");
  const n = await groups.count();
  if (n === 0) {
    problems.push("no session or cell group");
  } else {
    let pick = 0, best = -1;
    for (let i = 0; i < n; i++) {
      const marks = await groups.nth(i).locator(".mark").count();
      if (marks > best) { best = marks; pick = i; }
    }
    const group = groups.nth(pick);
    const details = group.locator("details.drill");
    await details.locator(":scope > summary").click();
    if (!(await details.evaluate((d) => d.open))) problems.push("the drill-down did not open");
    const body = details.locator(".drill-body");
    if (!(await body.isVisible())) problems.push("the drill-down's body is not visible");
    if ((await body.locator("table tbody tr").count()) === 0) problems.push("the drill-down holds no row");
    // Page coordinates (the click may have scrolled the page).
    const box = await group.evaluate((el) => {
      const r = el.getBoundingClientRect();
      return { y: r.top + window.scrollY, height: r.height };
    });
    await page.screenshot({
      path: path.join(outDir, `${name}-drill.png`),
      fullPage: true,
      clip: { x: 0, y: Math.max(0, box.y - 10), width: 1280, height: Math.min(box.height + 20, 1500) },
    });
  }
  await page.close();
  for (const p of problems) fail(`${name} (${file}): ${p}`);
  console.log(`html-check: ${name}: ${charts.length} charts, ${n} groups, ${problems.length} problems → ${path.join(outDir, name + ".png")}`);
}

(async () => {
  const profile = fs.mkdtempSync(path.join(outDir, "profile-"));
  // A fresh profile (--user-data-dir) for every check, removed afterwards.
  const browser = await browserType.launchPersistentContext(profile, {
    executablePath: chromium,
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  try {
    for (const spec of pages) {
      // NAME=FILE.html[=POLICIES]: policies may hold "=" themselves (compact:window=6000).
      const name = spec.slice(0, spec.indexOf("="));
      const rest = spec.slice(name.length + 1);
      const end = rest.indexOf(".html") + 5;
      const file = rest.slice(0, end);
      const pol = rest.slice(end + 1);
      await check(browser, name, file, pol ? pol.split(",") : null);
    }
  } finally {
    await browser.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
})().catch((e) => { fail(String(e && e.stack || e)); });
