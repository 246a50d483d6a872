// Opens foldbench's HTML pages in headless Chromium as a person would: from file://, no network.
// Fails on any console error, page error or request that is not file:// ; checks that every
// chart has exactly one line per policy; sorts and filters the first table; checks that the first
// column of a wide table stays in view when it scrolls; opens a drill-down; saves screenshots.
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
