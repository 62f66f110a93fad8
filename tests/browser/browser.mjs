// What the browser tests share: headless Chromium (Debian's /usr/bin/chromium, or $CHROMIUM) through puppeteer-core
// (pinned in tools/browser-check), and the check of a report page's charts from its own record (window.xspReport,
// written by the report's script: per chart, the marks its main mark drew and the number its data expects).
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);
const here = path.dirname(new URL(import.meta.url).pathname);
const puppeteer = require(path.join(here, '..', '..', 'tools', 'browser-check', 'node_modules', 'puppeteer-core'));

/// Starts headless Chromium. --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
export function launchChromium() {
  return puppeteer.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-extensions', '--disable-background-networking'],
    timeout: 60000,
  });
}

/// Records through `fail` every console error and page error of `page`.
export function watchErrors(page, fail) {
  page.on('console', (msg) => {
    if (msg.type() === 'error') fail(`console error on ${page.url()}: ${msg.text()}`);
  });
  page.on('pageerror', (err) => fail(`page error on ${page.url()}: ${err.message}`));
}

/// Waits (at most 120 s) until the report on `page` has rendered every chart, then checks: at least `minCharts`
/// charts, all rendered without error, each main mark drew marks and, where the data says how many, exactly that
/// many, and each chart's SVG is in the page. Failures go to `fail` prefixed with `name`; returns window.xspReport.
export async function checkCharts(page, name, minCharts, fail) {
  await page.waitForFunction(() => window.xspReport && window.xspReport.done === true, { timeout: 120000 });
  const r = await page.evaluate(() => window.xspReport);
  if (r.total < minCharts) fail(`${name}: expected at least ${minCharts} charts, got ${r.total}`);
  if (r.rendered !== r.total) fail(`${name}: ${r.rendered} of ${r.total} charts rendered`);
  for (const e of r.errors) fail(`${name}: chart error ${e}`);
  for (const [id, expected] of Object.entries(r.expected)) {
    const marks = r.marks[id];
    if (!(marks > 0)) fail(`${name}: chart ${id} drew no mark`);
    else if (expected >= 0 && marks !== expected) fail(`${name}: chart ${id} drew ${marks} marks, expected ${expected}`);
  }
  const svgs = await page.$$eval('div.chart svg', (els) => els.length);
  if (svgs !== r.total) fail(`${name}: ${svgs} chart SVGs in the page for ${r.total} charts`);
  return r;
}
