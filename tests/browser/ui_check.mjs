// The web UI of `xsp serve` in headless Chromium (Debian's /usr/bin/chromium through puppeteer-core, pinned in
// tools/browser-check): list → filter → open an evaluation (every chart renders with its expected marks, the
// timeline among them) → compare two → submit a small evaluation and watch it finish → open it. Every request must
// go to the server itself; a console error, a page error or a failed check fails the run. Screenshots of each page
// go to OUT_DIR.
//
// Usage: node ui_check.mjs BASE_URL OUT_DIR MODEL
// Prints one JSON line per page; exit 0 when every check holds, 1 otherwise.
import path from 'node:path';

import { checkCharts as checkReport, launchChromium, watchErrors } from './browser.mjs';

const [base, outDir, model] = process.argv.slice(2);
if (!base || !outDir || !model) {
  console.error('usage: node ui_check.mjs BASE_URL OUT_DIR MODEL');
  process.exit(2);
}
const origin = new URL(base).origin;
const failures = [];
const fail = (m) => failures.push(m);

async function checkCharts(page, name, minCharts) {
  const r = await checkReport(page, name, minCharts, fail);
  console.log(JSON.stringify({ page: name, charts: r.total, rendered: r.rendered }));
  return r;
}

async function shot(page, name) {
  await page.screenshot({ path: path.join(outDir, `${name}.png`) });
}

const browser = await launchChromium();
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1400, height: 1000 });
  await page.setRequestInterception(true);
  page.on('request', (req) => {
    if (req.url().startsWith(origin + '/') || req.url().startsWith('data:')) return req.continue();
    fail(`request to another host: ${req.url()}`);
    return req.abort();
  });
  watchErrors(page, fail);

  // 1. The list.
  await page.goto(base, { waitUntil: 'load' });
  await page.waitForFunction(() => document.querySelectorAll('#evaluations tbody tr').length >= 2, { timeout: 30000 });
  const listed = await page.$$eval('#evaluations tbody tr', (rows) => rows.map((r) => Number(r.dataset.id)));
  await page.waitForFunction(() => document.querySelectorAll('#models tbody tr').length >= 1, { timeout: 30000 });
  await shot(page, 'ui_list');
  console.log(JSON.stringify({ page: 'list', evaluations: listed }));

  // 2. A filter narrows the list to the model's evaluations.
  await page.type('#filters input[name=model]', model);
  await page.click('#filter');
  await page.waitForFunction(
    (m) => {
      const rows = Array.from(document.querySelectorAll('#evaluations tbody tr'));
      return rows.length > 0 && rows.every((r) => r.children[3].textContent === m);
    },
    { timeout: 30000 },
    model,
  );
  const filtered = await page.$$eval('#evaluations tbody tr', (rows) => rows.length);
  if (filtered >= listed.length) fail(`the filter model=${model} kept all ${listed.length} evaluations`);
  await page.$eval('#filters input[name=model]', (el) => { el.value = ''; });
  await page.click('#filter');
  await page.waitForFunction((n) => document.querySelectorAll('#evaluations tbody tr').length === n, { timeout: 30000 },
    listed.length);

  // 3. Open the oldest evaluation: every chart, and the timeline.
  const oldest = Math.min(...listed);
  await Promise.all([page.waitForNavigation({ waitUntil: 'load' }),
    page.click(`#evaluations tbody tr[data-id="${oldest}"] a.open`)]);
  await checkCharts(page, `evaluation ${oldest}`, 3);
  const timeline = await page.$$eval('figcaption', (caps) => caps.some((c) => c.textContent.startsWith('Timeline')));
  if (!timeline) fail(`evaluation ${oldest}: no trace timeline`);
  await shot(page, 'ui_evaluation');
  const clip = await page.evaluate(() => {
    const f = Array.from(document.querySelectorAll('figure'))
      .find((el) => el.querySelector('figcaption').textContent.startsWith('Timeline'));
    if (!f) return null;
    const r = f.getBoundingClientRect();
    return { x: r.x + window.scrollX, y: r.y + window.scrollY, width: Math.min(r.width, 1400), height: r.height };
  });
  if (clip) await page.screenshot({ path: path.join(outDir, 'ui_timeline.png'), clip, captureBeyondViewport: true });

  // 4. Compare two.
  await page.goto(base, { waitUntil: 'load' });
  await page.waitForFunction((n) => document.querySelectorAll('#evaluations tbody tr').length >= n, { timeout: 30000 },
    listed.length);
  const two = listed.slice(0, 2);
  for (const id of two) await page.click(`#evaluations tbody tr[data-id="${id}"] input[type=checkbox]`);
  await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click('#compare')]);
  await checkCharts(page, `compare ${two.join(',')}`, 2);
  if (!(await page.$('#comparison'))) fail('the comparison page has no comparison section');
  await shot(page, 'ui_compare');

  // 5. Submit a small evaluation and watch it finish.
  await page.goto(base, { waitUntil: 'load' });
  await page.waitForFunction(() => document.querySelectorAll('#submit-model option').length > 0, { timeout: 30000 });
  await page.select('#submit-model', model);
  await page.$eval('#submit input[name=min_duration_ms]', (el) => { el.value = '200'; });
  await page.click('#submit-button');
  await page.waitForFunction(() => document.querySelectorAll('#jobs tbody tr').length > 0, { timeout: 30000 });
  await shot(page, 'ui_submit');
  await page.waitForFunction(
    () => {
      const row = document.querySelector('#jobs tbody tr');
      return row && row.dataset.state !== 'queued' && row.dataset.state !== 'running';
    },
    { timeout: 300000 },
  );
  const state = await page.$eval('#jobs tbody tr', (r) => r.dataset.state);
  if (state !== 'done') fail(`the submitted job ended ${state}: ${await page.$eval('#jobs tbody tr', (r) => r.textContent)}`);
  await page.waitForFunction((n) => document.querySelectorAll('#evaluations tbody tr').length === n + 1, { timeout: 30000 },
    listed.length);
  await shot(page, 'ui_jobs');
  await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click('#jobs tbody tr a.evaluation')]);
  await checkCharts(page, 'submitted evaluation', 1);

  // 6. The agents view: none on an SQLite store, which says so.
  await page.goto(base, { waitUntil: 'load' });
  await page.waitForFunction(() => document.querySelector('#agents-empty').textContent.length > 0, { timeout: 30000 });
  const agents = await page.$$eval('#agents tbody tr', (rows) => rows.length);
  if (agents !== 0) fail(`the agents view lists ${agents} agents on an SQLite store`);
  console.log(JSON.stringify({ page: 'agents', agents, message: await page.$eval('#agents-empty', (e) => e.textContent) }));

  // 7. A long job with a priority, cancelled: it shows its priority and attempts, and Retry and Delete; Retry queues
  // it again, Delete removes it. Buttons are clicked inside the page: the job list is rebuilt every second, so a
  // handle taken outside it could be detached by the time it is clicked.
  const jobRow = (id) => `#jobs tbody tr[data-id="${id}"]`;
  const press = (id, button) => page.$eval(`${jobRow(id)} button.${button}`, (b) => b.click());
  const jobsBefore = await page.$$eval('#jobs tbody tr', (rows) => rows.map((r) => Number(r.dataset.id)));
  await page.waitForFunction(() => document.querySelectorAll('#submit-model option').length > 0, { timeout: 30000 });
  await page.select('#submit-model', model);
  await page.$eval('#submit input[name=min_duration_ms]', (el) => { el.value = '600000'; });
  await page.$eval('#submit input[name=priority]', (el) => { el.value = '2'; });
  await page.click('#submit-button');
  await page.waitForFunction((n) => document.querySelectorAll('#jobs tbody tr').length === n + 1, { timeout: 30000 },
    jobsBefore.length);
  const long = await page.$eval('#jobs tbody tr', (r) => Number(r.dataset.id));
  if (jobsBefore.includes(long)) fail(`the new job ${long} was listed before`);
  const priority = await page.$eval(`${jobRow(long)} td.priority`, (td) => td.textContent);
  if (priority !== '2') fail(`job ${long} shows priority '${priority}', expected 2`);
  await page.waitForFunction((sel) => document.querySelector(`${sel} button.cancel`), { timeout: 30000 }, jobRow(long));
  await press(long, 'cancel');
  await page.waitForFunction((sel) => {
    const row = document.querySelector(sel);
    return row && row.dataset.state === 'cancelled' && row.querySelector('button.retry');
  }, { timeout: 120000 }, jobRow(long));
  const attempts = await page.$eval(`${jobRow(long)} td.attempts`, (td) => td.textContent);
  if (!/^[01]\/1$/.test(attempts)) fail(`cancelled job ${long} shows attempts '${attempts}', expected 0/1 or 1/1`);
  if (!(await page.$(`${jobRow(long)} button.delete`))) fail(`cancelled job ${long} has no delete button`);
  await shot(page, 'ui_jobs_actions');
  console.log(JSON.stringify({ page: 'jobs', cancelled: long, attempts }));
  await press(long, 'retry');
  await page.waitForFunction((sel) => {
    const row = document.querySelector(sel);
    return row && (row.dataset.state === 'queued' || row.dataset.state === 'running') && row.querySelector('button.cancel');
  }, { timeout: 30000 }, jobRow(long));
  await press(long, 'cancel');
  await page.waitForFunction((sel) => document.querySelector(`${sel} button.delete`) &&
    document.querySelector(sel).dataset.state === 'cancelled', { timeout: 120000 }, jobRow(long));
  await press(long, 'delete');
  await page.waitForFunction((sel) => !document.querySelector(sel), { timeout: 30000 }, jobRow(long));
} catch (e) {
  fail(`stopped: ${e.message}`);
} finally {
  await browser.close();
}
if (failures.length) {
  for (const f of failures) console.error(`FAIL ${f}`);
  process.exit(1);
}
