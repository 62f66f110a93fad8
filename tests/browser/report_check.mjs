// Opens an XSP HTML report in headless Chromium with the network cut off, waits for every chart to render and
// checks each one's marks (browser.mjs checkCharts). Fails on any request leaving the file, any console or page
// error, and any chart that did not render or drew another number of marks than its data rows.
//
// Usage: node report_check.mjs REPORT.html SCREENSHOT.png [MIN_CHARTS]
// Prints one JSON line {charts, rendered, marks, screenshot}; exit 0 when every check holds, 1 otherwise.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

import { checkCharts, launchChromium, watchErrors } from './browser.mjs';

const [report, screenshot, minChartsText] = process.argv.slice(2);
if (!report || !screenshot) {
  console.error('usage: node report_check.mjs REPORT.html SCREENSHOT.png [MIN_CHARTS]');
  process.exit(2);
}
const failures = [];
const fail = (m) => failures.push(m);

const browser = await launchChromium();
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
  watchErrors(page, fail);
  await page.goto(url, { waitUntil: 'load', timeout: 60000 });
  const r = await checkCharts(page, report, Number(minChartsText ?? '1'), fail);
  await page.screenshot({ path: screenshot, fullPage: true });
  console.log(JSON.stringify({ charts: r.total, rendered: r.rendered, marks: r.marks, screenshot }));
} finally {
  await browser.close();
}
if (failures.length) {
  for (const f of failures) console.error(`FAIL ${f}`);
  process.exit(1);
}
