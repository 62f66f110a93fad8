// Opens an XSP HTML report in headless Chromium (Debian's /usr/bin/chromium through puppeteer-core, pinned in
// tools/browser-check) with the network cut off, waits for every chart to render and checks, per chart, that its
// main mark drew the expected number of items (window.xspReport, written by the report's own script). Fails on any
// request leaving the file, any console error or page error, and any chart that did not render.
//
// Usage: node report_check.mjs REPORT.html SCREENSHOT.png [MIN_CHARTS]
// Prints one JSON line {charts, rendered, marks, screenshot}; exit 0 when every check holds, 1 otherwise.
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const require = createRequire(import.meta.url);
const here = path.dirname(new URL(import.meta.url).pathname);
const puppeteer = require(path.join(here, '..', '..', 'tools', 'browser-check', 'node_modules', 'puppeteer-core'));

const [report, screenshot, minChartsText] = process.argv.slice(2);
if (!report || !screenshot) {
  console.error('usage: node report_check.mjs REPORT.html SCREENSHOT.png [MIN_CHARTS]');
  process.exit(2);
}
const minCharts = Number(minChartsText ?? '1');
const failures = [];
const fail = (m) => failures.push(m);

const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  headless: true,
  // --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
  args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-extensions', '--disable-background-networking'],
  timeout: 60000,
});
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 900 });
  await page.setOfflineMode(true);
  const url = pathToFileURL(path.resolve(report)).href;
  await page.setRequestInterception(true);
  page.on('request', (req) => {
    if (req.url() === url || req.url().startsWith('data:')) return req.continue();
    fail(`request leaving the file: ${req.url()}`);
    return req.abort();
  });
  page.on('console', (msg) => {
    if (msg.type() === 'error') fail(`console error: ${msg.text()}`);
  });
  page.on('pageerror', (err) => fail(`page error: ${err.message}`));

  await page.goto(url, { waitUntil: 'load', timeout: 60000 });
  await page.waitForFunction(() => window.xspReport && window.xspReport.done === true, { timeout: 120000 });
  const r = await page.evaluate(() => window.xspReport);
  if (r.total < minCharts) fail(`expected at least ${minCharts} charts, the report has ${r.total}`);
  if (r.rendered !== r.total) fail(`${r.rendered} of ${r.total} charts rendered`);
  for (const e of r.errors) fail(`chart error: ${e}`);
  for (const [id, expected] of Object.entries(r.expected)) {
    const marks = r.marks[id];
    if (!(marks > 0)) fail(`chart ${id}: no mark drawn`);
    else if (expected >= 0 && marks !== expected) fail(`chart ${id}: ${marks} marks drawn, expected ${expected}`);
  }
  // Each chart's SVG is in the page, with its marks as SVG elements (not only in Vega's scenegraph).
  const svgs = await page.$$eval('div.chart svg', (els) => els.length);
  if (svgs !== r.total) fail(`${svgs} chart SVGs in the page for ${r.total} charts`);
  await page.screenshot({ path: screenshot, fullPage: true });
  console.log(JSON.stringify({ charts: r.total, rendered: r.rendered, marks: r.marks, screenshot }));
} finally {
  await browser.close();
}
if (failures.length) {
  for (const f of failures) console.error(`FAIL ${f}`);
  process.exit(1);
}
