// The web UI of `xsp serve` on a shared PostgreSQL store, in headless Chromium: the Agents view lists the running
// agent with its frameworks; a job submitted from the form with a GPU pattern no agent has waits and says why; a job
// any agent can run is run by the agent (not the server), shows the agent and its attempts, and its evaluation opens
// from the job row. Screenshots go to OUT_DIR.
//
// Usage: node ui_agents_check.mjs BASE_URL OUT_DIR MODEL AGENT_NAME
// Prints one JSON line per check; exit 0 when every check holds, 1 otherwise.
import path from 'node:path';

import { checkCharts, launchChromium, watchErrors } from './browser.mjs';

const [base, outDir, model, agentName] = process.argv.slice(2);
if (!base || !outDir || !model || !agentName) {
  console.error('usage: node ui_agents_check.mjs BASE_URL OUT_DIR MODEL AGENT_NAME');
  process.exit(2);
}
const failures = [];
const fail = (m) => failures.push(m);
const browser = await launchChromium();
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1400, height: 1000 });
  watchErrors(page, fail);
  await page.goto(base, { waitUntil: 'load' });

  // 1. The agent, live, with what it has.
  await page.waitForFunction((name) => Array.from(document.querySelectorAll('#agents tbody tr'))
    .some((r) => r.textContent.includes(name)), { timeout: 30000 }, agentName);
  const agentRow = await page.$$eval('#agents tbody tr', (rows, name) =>
    rows.map((r) => r.textContent).find((t) => t.includes(name)), agentName);
  if (!/idle|busy/.test(agentRow)) fail(`the agent is not shown live: ${agentRow}`);
  if (!agentRow.includes('libtorch')) fail(`the agent's frameworks are not shown: ${agentRow}`);
  console.log(JSON.stringify({ check: 'agent listed', row: agentRow }));

  const submit = async (gpuPattern) => {
    const before = await page.$$eval('#jobs tbody tr', (rows) => rows.length);
    await page.waitForFunction(() => document.querySelectorAll('#submit-model option').length > 0, { timeout: 30000 });
    await page.select('#submit-model', model);
    await page.$eval('#submit input[name=min_duration_ms]', (el) => { el.value = '100'; });
    await page.$eval('#submit input[name=gpu_pattern]', (el, v) => { el.value = v; }, gpuPattern);
    await page.click('#submit-button');
    await page.waitForFunction((n) => document.querySelectorAll('#jobs tbody tr').length === n + 1, { timeout: 30000 },
      before);
    return page.$eval('#jobs tbody tr', (r) => Number(r.dataset.id));  // newest first
  };
  const row = (id) => `#jobs tbody tr[data-id="${id}"]`;

  // 2. A job no agent can run: queued, with the reason naming the agent and what it lacks.
  const waiting = await submit('*H100*');
  await page.waitForFunction((sel) => {
    const r = document.querySelector(sel);
    return r && r.querySelector('.waiting') && r.querySelector('.waiting').textContent.includes('H100');
  }, { timeout: 30000 }, row(waiting));
  const reason = await page.$eval(`${row(waiting)} .waiting`, (c) => c.textContent);
  if (!reason.includes(agentName)) fail(`the waiting reason does not name the agent: ${reason}`);
  console.log(JSON.stringify({ check: 'waiting reason', job: waiting, reason }));

  // 3. A job the agent runs: done, with the agent's name and one attempt, and its evaluation opens.
  const ran = await submit('');
  await page.waitForFunction((sel) => {
    const r = document.querySelector(sel);
    return r && ['done', 'failed', 'cancelled'].includes(r.dataset.state);
  }, { timeout: 120000 }, row(ran));
  const done = await page.$eval(row(ran), (r) => ({ state: r.dataset.state, text: r.textContent }));
  if (done.state !== 'done') fail(`the agent's job ended ${done.state}: ${done.text}`);
  if (!done.text.includes(agentName)) fail(`the job row does not name the agent: ${done.text}`);
  console.log(JSON.stringify({ check: 'job run by the agent', job: ran, row: done.text }));
  // The result is in the shared store: the evaluation list and the agent's count show it once the page refreshes.
  await page.waitForFunction(() => document.querySelectorAll('#evaluations tbody tr').length === 1, { timeout: 30000 });
  await page.waitForFunction((name) => Array.from(document.querySelectorAll('#agents tbody tr'))
    .some((r) => r.cells[0].textContent === name && r.cells[6].textContent === '1'), { timeout: 30000 }, agentName);
  console.log(JSON.stringify({ check: 'listed as an evaluation and counted for the agent' }));
  await page.screenshot({ path: path.join(outDir, 'ui_jobs_agents_postgres.png'), fullPage: true });
  await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click(`${row(ran)} a.evaluation`)]);
  const charts = await checkCharts(page, 'the agent\'s evaluation', 1, fail);
  console.log(JSON.stringify({ check: 'evaluation opens', charts: charts.total, rendered: charts.rendered }));
} finally {
  await browser.close();
}
if (failures.length) {
  for (const f of failures) console.error(`FAIL: ${f}`);
  process.exit(1);
}
