// The web UI of `xsp serve` in headless Chromium (Debian's /usr/bin/chromium through puppeteer-core, pinned in
// tools/browser-check): list (key metrics, sorting, the chart across runs, names and tags edited inline, the tag and
// lower-case model filters) → filter → open an evaluation (every chart renders with its expected marks, the
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

  // 1b. Key metrics per evaluation: the CPU evaluations made here have a p50, a throughput and a verdict.
  const metrics = await page.$$eval('#evaluations tbody tr', (rows) => rows.map((r) => ({
    id: Number(r.dataset.id), model: r.querySelector('td.model').textContent,
    p50: r.querySelector('td.p50').textContent, throughput: r.querySelector('td.throughput').textContent,
    stability: r.querySelector('td.stability').textContent })));
  for (const m of metrics.filter((x) => x.model === model)) {
    if (!/^\d+\.\d{3} @1$/.test(m.p50)) fail(`evaluation ${m.id}: p50 cell '${m.p50}', expected 'N.NNN @1'`);
    if (!/^\d+\.\d @8$/.test(m.throughput)) fail(`evaluation ${m.id}: throughput cell '${m.throughput}', expected 'N.N @8'`);
    if (!['stable', 'unstable', 'not_assessed'].includes(m.stability)) fail(`evaluation ${m.id}: stability '${m.stability}'`);
  }
  console.log(JSON.stringify({ page: 'list metrics', metrics }));

  // 1c. Sorting: by p50 ascending, then descending (missing values last both times).
  const p50Order = () => page.$$eval('#evaluations tbody tr', (rows) => rows.map((r) => {
    const t = r.querySelector('td.p50').textContent;
    return t ? parseFloat(t) : null;
  }));
  const sortedAs = (v, dir) => {
    const known = v.filter((x) => x !== null);
    return known.every((x, i) => i === 0 || dir * (x - known[i - 1]) >= 0) &&
      v.slice(known.length).every((x) => x === null);
  };
  const idsBefore = await page.$$eval('#evaluations tbody tr', (rows) => rows.map((r) => r.dataset.id).join(','));
  await page.click('#evaluations th[data-key=p50]');
  const up = await p50Order();
  if (!sortedAs(up, 1)) fail(`p50 ascending: ${JSON.stringify(up)}`);
  await page.click('#evaluations th[data-key=p50]');
  const down = await p50Order();
  if (!sortedAs(down, -1)) fail(`p50 descending: ${JSON.stringify(down)}`);
  const idsSorted = await page.$$eval('#evaluations tbody tr', (rows) => rows.map((r) => r.dataset.id).join(','));
  if (up.filter((x) => x !== null).length >= 2 && JSON.stringify(up) === JSON.stringify(down)) {
    fail('sorting by p50 twice gave the same order');
  }
  console.log(JSON.stringify({ page: 'sort', before: idsBefore, p50_descending: idsSorted }));
  await page.click('#evaluations th[data-key=created]');  // back to newest first (a click on a new key: ascending)
  await page.click('#evaluations th[data-key=created]');

  // 1d. The chart of a model's latency across runs draws one point per evaluation of the model.
  await page.select('#trend-model', model);
  await page.waitForFunction(() => document.querySelector('#trend svg'), { timeout: 30000 });
  const points = await page.$$eval('#trend svg path[role=graphics-symbol], #trend svg .mark-symbol path',
    (els) => els.length);
  const ofModel = metrics.filter((x) => x.model === model).length;
  if (points < ofModel) fail(`the chart across runs draws ${points} points for ${ofModel} evaluations of ${model}`);
  await shot(page, 'ui_list_trend');

  // 1e. A name and tags edited inline are shown in the row, and a tag filters the list.
  const labelled = metrics.find((x) => x.model === model).id;
  const rowSel = `#evaluations tbody tr[data-id="${labelled}"]`;
  await page.click(`${rowSel} button.label-edit`);
  await page.waitForSelector(`tr.label-row[data-for="${labelled}"] form`);
  await page.type(`tr.label-row[data-for="${labelled}"] input[name=name]`, 'cpu baseline');
  await page.type(`tr.label-row[data-for="${labelled}"] input[name=tags]`, 'baseline, digits');
  await page.click(`tr.label-row[data-for="${labelled}"] button.label-save`);
  await page.waitForFunction((sel) => {
    const r = document.querySelector(sel);
    return r && r.querySelector('.label-name').textContent === 'cpu baseline';
  }, { timeout: 30000 }, rowSel);
  const tags = await page.$$eval(`${rowSel} span.tag`, (els) => els.map((e) => e.textContent));
  if (tags.join(',') !== 'baseline,digits') fail(`evaluation ${labelled} shows tags ${JSON.stringify(tags)}`);
  await shot(page, 'ui_labels');
  await page.click(`${rowSel} span.tag`);
  await page.waitForFunction((id) => {
    const rows = Array.from(document.querySelectorAll('#evaluations tbody tr'));
    return rows.length === 1 && rows[0].dataset.id === String(id);
  }, { timeout: 30000 }, labelled);
  await page.$eval('#filters input[name=tag]', (el) => { el.value = ''; });
  console.log(JSON.stringify({ page: 'labels', evaluation: labelled, tags }));

  // 2. A filter narrows the list to the model's evaluations: the lower-case CLI name finds the display name.
  await page.type('#filters input[name=model]', model.toLowerCase());
  await page.click('#filter');
  await page.waitForFunction(
    (m) => {
      const rows = Array.from(document.querySelectorAll('#evaluations tbody tr'));
      return rows.length > 0 && rows.every((r) => r.querySelector('td.model').textContent === m);
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
  if (!(await page.$('a[href="/"]'))) fail(`evaluation ${oldest}: no link back to the list`);
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
  for (const id of two) {
    if (!(await page.$(`a[href="/api/v1/report?ids=${id}"]`))) fail(`the comparison has no link to evaluation ${id}`);
  }
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
