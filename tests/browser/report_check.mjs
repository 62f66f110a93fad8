// Opens an XSP HTML report in headless Chromium with the network cut off, waits for every chart to render and
// checks each one's marks (browser.mjs checkCharts). Fails on any request leaving the file, any console or page
// error, and any chart that did not render or drew another number of marks than its data rows.
//
// With KIND (sweep | scenario | generation | compare | gpu), it also checks what a person reads on the page
// (seeWhatAPersonSees): a headline, no empty analysis sections, named and sorted layer bars, integer batch ticks
// and a legend on A1, a timeline whose boxes carry names on lanes per track and depth, G1–G3 and the token
// distributions of a generation report, the comparison's verdict sentences.
//
// Usage: node report_check.mjs REPORT.html SCREENSHOT.png [MIN_CHARTS [KIND]]
// Prints one JSON line {charts, rendered, marks, screenshot}; exit 0 when every check holds, 1 otherwise.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

import { checkCharts, launchChromium, seeWhatAPersonSees, watchErrors } from './browser.mjs';

const [report, screenshot, minChartsText, kind] = process.argv.slice(2);
if (!report || !screenshot) {
  console.error('usage: node report_check.mjs REPORT.html SCREENSHOT.png [MIN_CHARTS]');
  process.exit(2);
}
const failures = [];
const fail = (m) => failures.push(m);

const browser = await launchChromium();
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1400, height: 900 });
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
  if (kind) await seeWhatAPersonSees(page, kind, fail);
  await page.screenshot({ path: screenshot, fullPage: true });
  console.log(JSON.stringify({ charts: r.total, rendered: r.rendered, marks: r.marks, screenshot }));
} finally {
  await browser.close();
}
if (failures.length) {
  for (const f of failures) console.error(`FAIL ${f}`);
  process.exit(1);
}
