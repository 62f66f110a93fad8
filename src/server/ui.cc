// The web UI's one page (GET /): browse and filter models and evaluations, open one (its report page, every
// analysis as a chart and a table, and the trace timeline), compare several, submit an evaluation (with optional
// constraints and priority) and watch, cancel, retry or delete jobs, and see the agents that run them. Plain HTML and
// JavaScript over the REST API of docs/server.md; the charts are the report's (GET /api/v1/report), which inlines Vega,
// so nothing is fetched from another host.
#include "ui.h"

namespace xsp::detail {

// The page is one raw string, a data table rather than logic.
// NOLINTNEXTLINE(readability-function-size)
std::string_view ui_html() {
  return R"html(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>XSP</title>
<script src="/assets/vega.min.js"></script>
<script src="/assets/vega-lite.min.js"></script>
<script src="/assets/vega-embed.min.js"></script>
<style>
body { font: 14px/1.45 system-ui, sans-serif; margin: 0 2em 3em; color: #1d1d1f; }
header { display: flex; align-items: baseline; gap: 2em; border-bottom: 1px solid #ccc; }
section { margin-top: 1.5em; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: left; white-space: nowrap; }
td.num { text-align: right; }
td.wrap { white-space: normal; max-width: 24em; }
form.inline label { margin-right: 1em; }
input[type=text], input[type=number], select { font: inherit; padding: 1px 4px; }
input[type=number] { width: 6em; }
button { font: inherit; padding: 2px 10px; }
.error { color: #b00020; }
.muted { color: #666; }
th.sortable { cursor: pointer; user-select: none; }
th.sortable[aria-sort=ascending]::after { content: ' ▲'; }
th.sortable[aria-sort=descending]::after { content: ' ▼'; }
.tag { display: inline-block; background: #e8eef9; color: #1a3d7c; border-radius: 3px; padding: 0 4px; margin: 0 2px;
  font-size: 12px; }
td.unstable { color: #b00020; font-weight: 600; }
td.stable { color: #1b6e20; }
tr.editing td { background: #fafafa; }
.label-form input[type=text] { width: 14em; }
.label-form textarea { font: inherit; width: 30em; height: 3.5em; vertical-align: top; }
#trend { min-height: 1em; }
progress { width: 10em; }
</style></head>
<body>
<header><h1>XSP</h1><span class="muted">profiling and benchmarking across the stack ·
<a href="/api/v1">REST API</a></span>
<label>token for writes <input type="text" id="token" size="16" placeholder="(none)"></label></header>

<section id="evaluations-section">
<h2>Evaluations</h2>
<form class="inline" id="filters">
<label>model <input type="text" name="model" size="12" placeholder="resnet18"
  title="any part of the model's name, case and - _ ignored (the zoo's CLI name works)"></label>
<label>framework <input type="text" name="framework" size="10"></label>
<label>device <input type="text" name="device" size="8" placeholder="cpu, cuda"></label>
<label>host <input type="text" name="host" size="10"></label>
<label>tag <input type="text" name="tag" size="10"></label>
<label>since <input type="text" name="since" size="12" placeholder="2026-11-01"></label>
<label>until <input type="text" name="until" size="12"></label>
<button type="submit" id="filter">filter</button>
</form>
<p id="evaluations-error" class="error"></p>
<table id="evaluations"><thead><tr></tr></thead><tbody></tbody></table>
<p><button id="compare" disabled>compare selected</button> <span class="muted" id="selected-count">select two or
more</span> <span class="muted">· p50: predict latency at the smallest batch size, throughput at the largest (the
shallowest trace level's run); click a heading to sort</span></p>
</section>

<section id="trend-section">
<h2>Latency across runs</h2>
<form class="inline" id="trend-options">
<label>model <select id="trend-model"></select></label>
<label>figure <select id="trend-metric"><option value="p50_ms">p50 latency (ms)</option>
<option value="throughput_samples_per_s">throughput (samples/s)</option></select></label>
<label>colour by <select id="trend-color"><option value="host">machine</option><option value="framework">framework</option>
<option value="device">device</option></select></label>
</form>
<div id="trend"></div>
<p id="trend-note" class="muted"></p>
</section>

<section id="submit-section">
<h2>Submit an evaluation</h2>
<form class="inline" id="submit">
<label>model <select name="model" id="submit-model"></select></label>
<label>framework <input type="text" name="framework" size="10" placeholder="(manifest's)"></label>
<label>device <input type="text" name="device" size="6" value="cpu"></label>
<label>batch sizes <input type="text" name="batch_sizes" size="8" value="1"></label>
<label>trace level <select name="trace_level"><option>model</option><option>framework</option>
<option>library</option><option>system</option><option>kernel</option><option>hardware</option></select></label>
<label><input type="checkbox" name="synthetic" checked> synthetic inputs</label>
<label>min duration (ms) <input type="number" name="min_duration_ms" size="6" value="1000"></label>
<br><span class="muted">optional, for agents:</span>
<label>GPU pattern <input type="text" name="gpu_pattern" size="10" placeholder="*H100*"></label>
<label>min GPU memory (GiB) <input type="number" name="min_gpu_memory_gib" min="0" step="any" size="5"></label>
<label>host <input type="text" name="host" size="10"></label>
<label>framework version <input type="text" name="framework_version" size="6" placeholder="2.11"></label>
<label>priority <input type="number" name="priority" step="1" size="4" value="0"></label>
<button type="submit" id="submit-button">submit</button>
</form>
<p id="submit-error" class="error"></p>
<h3>Jobs</h3>
<table id="jobs"><thead><tr><th>job</th><th>state</th><th>model</th><th>framework/device</th><th>constraints</th>
<th>priority</th><th>attempts</th><th>agent</th><th>progress</th><th>waiting for</th><th>error</th><th>evaluation</th>
<th></th></tr></thead><tbody></tbody></table>
</section>

<section id="agents-section">
<h2>Agents</h2>
<table id="agents"><thead><tr><th>name</th><th>state</th><th>host</th><th>frameworks</th><th>GPUs</th>
<th>current job</th><th>done</th><th>failed</th><th>last heartbeat</th></tr></thead><tbody></tbody></table>
<p id="agents-empty" class="muted"></p>
<p id="agents-error" class="error"></p>
</section>

<section id="models-section">
<h2>Models</h2>
<table id="models"><thead><tr><th>name</th><th>version</th><th>frameworks</th><th>description</th></tr></thead>
<tbody></tbody></table>
<p id="models-problems" class="muted"></p>
</section>

<script>
'use strict';
const $ = (s) => document.querySelector(s);
const tokenInput = $('#token');
tokenInput.value = sessionStorage.getItem('xsp-token') || '';
tokenInput.addEventListener('change', () => sessionStorage.setItem('xsp-token', tokenInput.value.trim()));

function cell(text, cls) {
  const td = document.createElement('td');
  td.textContent = text === undefined || text === null ? '' : String(text);
  if (cls) td.className = cls;
  return td;
}
async function api(path, options) {
  const opts = Object.assign({ headers: {} }, options || {});
  const token = tokenInput.value.trim();
  const write = opts.method && opts.method !== 'GET';
  if (token && write) opts.headers['Authorization'] = 'Bearer ' + token;
  // The server takes writes as JSON only (its guard against cross-site forms), even without a body.
  if (write && opts.method !== 'DELETE') opts.headers['Content-Type'] = 'application/json';
  const res = await fetch('/api/v1' + path, opts);
  const body = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error((body.error && body.error.message) || ('HTTP ' + res.status));
  return body;
}

const selected = new Set();
function updateCompare() {
  $('#compare').disabled = selected.size < 2;
  $('#selected-count').textContent = selected.size + ' selected';
}
$('#compare').addEventListener('click', () => {
  location.href = '/api/v1/report?ids=' + Array.from(selected).sort((a, b) => a - b).join(',');
});

const num = (v, digits) => (v === null || v === undefined ? '' : Number(v).toFixed(digits));
// The list's columns: key (sort key and cell class), heading, the value sorted on, how it is shown.
const columns = [
  { key: 'id', label: 'id', value: (e) => e.id, num: true },
  { key: 'name', label: 'name / tags', value: (e) => (e.name || '').toLowerCase() || null },
  { key: 'created', label: 'created', value: (e) => e.created_at },
  { key: 'model', label: 'model', value: (e) => e.model },
  { key: 'framework', label: 'framework', value: (e) => e.framework },
  { key: 'device', label: 'device', value: (e) => e.device },
  { key: 'host', label: 'host', value: (e) => e.host },
  { key: 'scenario', label: 'scenario', value: (e) => e.scenario },
  { key: 'level', label: 'trace level', value: (e) => e.trace_level },
  { key: 'batches', label: 'batch sizes', value: (e) => (e.batch_sizes || [])[0], show: (e) => (e.batch_sizes || []).join(',') },
  { key: 'p50', label: 'p50 (ms)', value: (e) => e.metrics.p50_ms, num: true,
    show: (e) => (e.metrics.p50_ms === null ? '' : num(e.metrics.p50_ms, 3) + ' @' + e.metrics.p50_batch_size) },
  { key: 'throughput', label: 'throughput (/s)', value: (e) => e.metrics.throughput_samples_per_s, num: true,
    show: (e) => (e.metrics.throughput_samples_per_s === null ? '' :
      num(e.metrics.throughput_samples_per_s, 1) + ' @' + e.metrics.throughput_batch_size) },
  { key: 'stability', label: 'stability', value: (e) => e.metrics.stability },
  { key: 'runs', label: 'runs', value: (e) => e.runs, num: true },
  { key: 'status', label: 'status', value: (e) => e.status },
];
let evaluations = [];
let sortKey = 'created';
let sortDescending = true;

function drawHead() {
  const tr = $('#evaluations thead tr');
  tr.replaceChildren(document.createElement('th'));
  for (const c of columns) {
    const th = document.createElement('th');
    th.textContent = c.label; th.className = 'sortable'; th.dataset.key = c.key;
    if (c.key === sortKey) th.setAttribute('aria-sort', sortDescending ? 'descending' : 'ascending');
    th.addEventListener('click', () => {
      sortDescending = c.key === sortKey ? !sortDescending : false;
      sortKey = c.key;
      drawEvaluations();
    });
    tr.appendChild(th);
  }
  tr.appendChild(document.createElement('th'));
}

// Missing values last in either direction; numbers as numbers, text case-insensitively.
function sortedEvaluations() {
  const c = columns.find((k) => k.key === sortKey);
  const dir = sortDescending ? -1 : 1;
  return evaluations.slice().sort((a, b) => {
    const x = c.value(a), y = c.value(b);
    const xm = x === null || x === undefined || x === '', ym = y === null || y === undefined || y === '';
    if (xm || ym) return xm === ym ? b.id - a.id : (xm ? 1 : -1);
    if (typeof x === 'number' && typeof y === 'number') return dir * (x - y) || b.id - a.id;
    return dir * String(x).localeCompare(String(y), undefined, { sensitivity: 'base', numeric: true }) || b.id - a.id;
  });
}

function labelCell(e) {
  const td = cell('', 'name');
  const name = document.createElement('span');
  name.className = 'label-name'; name.textContent = e.name || '';
  if (e.note) name.title = e.note;
  td.appendChild(name);
  for (const t of e.tags || []) {
    const tag = document.createElement('span');
    tag.className = 'tag'; tag.textContent = t; tag.title = 'show only tag ' + t;
    tag.addEventListener('click', () => { $('#filters input[name=tag]').value = t; loadEvaluations(); });
    td.appendChild(tag);
  }
  if (e.note) {
    const n = document.createElement('span');
    n.className = 'muted note-mark'; n.textContent = ' ✎'; n.title = e.note;
    td.appendChild(n);
  }
  const edit = document.createElement('button');
  edit.textContent = 'edit'; edit.className = 'label-edit'; edit.title = 'name, tags, note';
  edit.addEventListener('click', () => editLabels(e, td.parentElement));
  td.appendChild(document.createTextNode(' ')); td.appendChild(edit);
  return td;
}

// An inline form under the row: PATCH /evaluations/{id} with {name, tags, note}; the row is redrawn from the answer.
function editLabels(e, tr) {
  const open = document.querySelector(`#evaluations tr.label-row[data-for="${e.id}"]`);
  if (open) { open.remove(); tr.classList.remove('editing'); return; }
  tr.classList.add('editing');
  const row = document.createElement('tr');
  row.className = 'label-row'; row.dataset.for = e.id;
  const td = document.createElement('td'); td.colSpan = columns.length + 2;
  const form = document.createElement('form'); form.className = 'inline label-form';
  form.innerHTML = '<label>name <input type="text" name="name" maxlength="120"></label>' +
    '<label>tags <input type="text" name="tags" placeholder="baseline, fp16"></label>' +
    '<label>note <textarea name="note" maxlength="4000"></textarea></label>' +
    '<button type="submit" class="label-save">save</button> <button type="button" class="label-cancel">cancel</button>' +
    ' <span class="error label-error"></span>';
  form.elements.name.value = e.name || '';
  form.elements.tags.value = (e.tags || []).join(', ');
  form.elements.note.value = e.note || '';
  form.querySelector('.label-cancel').addEventListener('click', () => { row.remove(); tr.classList.remove('editing'); });
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const tags = form.elements.tags.value.split(/[\s,]+/).filter((t) => t);
    try {
      const body = await api('/evaluations/' + e.id, { method: 'PATCH',
        body: JSON.stringify({ name: form.elements.name.value, tags, note: form.elements.note.value }) });
      Object.assign(e, { name: body.name, tags: body.tags, note: body.note });
      drawEvaluations();
    } catch (err) { form.querySelector('.label-error').textContent = err.message; }
  });
  td.appendChild(form); row.appendChild(td);
  tr.after(row);
  form.elements.name.focus();
}

function drawEvaluations() {
  drawHead();
  const tbody = $('#evaluations tbody');
  tbody.replaceChildren();
  for (const e of sortedEvaluations()) {
    const tr = document.createElement('tr');
    tr.dataset.id = e.id;
    const box = document.createElement('input');
    box.type = 'checkbox';
    box.checked = selected.has(e.id);
    box.addEventListener('change', () => { box.checked ? selected.add(e.id) : selected.delete(e.id); updateCompare(); });
    const pick = cell(''); pick.appendChild(box); tr.appendChild(pick);
    for (const c of columns) {
      if (c.key === 'name') { tr.appendChild(labelCell(e)); continue; }
      const v = c.show ? c.show(e) : c.value(e);
      const cls = c.key + (c.num ? ' num' : '') + (c.key === 'stability' && v ? ' ' + v : '');
      tr.appendChild(cell(v, cls));
    }
    const open = cell('');
    const a = document.createElement('a');
    a.href = '/api/v1/report?ids=' + e.id; a.textContent = 'open'; a.className = 'open';
    open.appendChild(a); tr.appendChild(open);
    tbody.appendChild(tr);
  }
  updateCompare();
  drawTrend();
}

async function loadEvaluations() {
  const params = new URLSearchParams();
  for (const el of $('#filters').elements) {
    if (!el.name || !el.value.trim()) continue;
    // The model box matches loosely (model_like): "resnet18" finds ResNet-18.
    params.set(el.name === 'model' ? 'model_like' : el.name, el.value.trim());
  }
  params.set('limit', '1000');
  $('#evaluations-error').textContent = '';
  try {
    const body = await api('/evaluations' + '?' + params);
    evaluations = body.evaluations;
    drawEvaluations();
  } catch (err) { $('#evaluations-error').textContent = err.message; }
}
$('#filters').addEventListener('submit', (ev) => { ev.preventDefault(); loadEvaluations(); });

// One model's figure over time, one point per evaluation, coloured by machine, framework or device (Vega-Lite, served
// by this server from the report's inlined copies).
let trendView = null;
async function drawTrend() {
  const select = $('#trend-model');
  const models = Array.from(new Set(evaluations.map((e) => e.model))).sort();
  const previous = select.value;
  select.replaceChildren(...models.map((m) => { const o = document.createElement('option'); o.textContent = m; return o; }));
  if (models.includes(previous)) select.value = previous;
  const metric = $('#trend-metric').value, color = $('#trend-color').value;
  const values = evaluations.filter((e) => e.model === select.value && e.metrics[metric] !== null)
    .map((e) => ({ id: e.id, created: e.created_at, value: e.metrics[metric], host: e.host || '(unknown)',
      framework: e.framework, device: e.device, name: e.name || '' }));
  $('#trend-note').textContent = values.length ? '' : 'No evaluation of this model has the figure.';
  if (trendView) { trendView.finalize(); trendView = null; }
  $('#trend').replaceChildren();
  if (!values.length) return;
  if (typeof vegaEmbed !== 'function') { $('#trend-note').textContent = 'charts need the report assets (Vega)'; return; }
  const title = $('#trend-metric').selectedOptions[0].textContent;
  const spec = {
    $schema: 'https://vega.github.io/schema/vega-lite/v5.json', width: 640, height: 220,
    data: { values },
    mark: { type: 'line', point: { size: 60 } },
    encoding: {
      x: { field: 'created', type: 'temporal', title: 'created (UTC)', scale: { type: 'utc' }, axis: { format: '%m-%d %H:%M', labelOverlap: true, tickCount: 6 } },
      y: { field: 'value', type: 'quantitative', title, scale: { zero: false } },
      color: { field: color, type: 'nominal', title: color === 'host' ? 'machine' : color },
      tooltip: [{ field: 'id' }, { field: 'name' }, { field: 'created', type: 'temporal', format: '%Y-%m-%d %H:%M', timeUnit: 'utcyearmonthdatehoursminutes' },
        { field: 'value', title, format: '.4~g' }, { field: 'host' }, { field: 'framework' }, { field: 'device' }],
    },
  };
  try {
    trendView = (await vegaEmbed('#trend', spec, { actions: false, renderer: 'svg' })).view;
  } catch (err) { $('#trend-note').textContent = 'chart: ' + err.message; }
}
for (const id of ['#trend-model', '#trend-metric', '#trend-color']) $(id).addEventListener('change', drawTrend);

async function loadModels() {
  const body = await api('/models');
  const tbody = $('#models tbody');
  const select = $('#submit-model');
  let firstRunnable = null;
  for (const m of body.models) {
    const tr = document.createElement('tr');
    tr.appendChild(cell(m.name)); tr.appendChild(cell(m.version));
    tr.appendChild(cell((m.frameworks || []).map((f) => f.name + (f.exported ? '' : ' (not exported)')).join(', ')));
    tr.appendChild(cell(m.description));
    tbody.appendChild(tr);
    // A model can run only when a graph of a framework of this build is on disk (`xsp models` says how to export).
    const runnable = (m.frameworks || []).some((f) => f.exported && f.in_this_build);
    const o = document.createElement('option');
    o.value = m.name; o.textContent = m.name + (runnable ? '' : ' (not exported)');
    select.appendChild(o);
    if (runnable && !firstRunnable) firstRunnable = m.name;
  }
  if (firstRunnable) select.value = firstRunnable;
  if ((body.problems || []).length) $('#models-problems').textContent = body.problems.length + ' manifest(s) could not be used: see GET /api/v1/models';
}

$('#submit').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const f = ev.target.elements;
  $('#submit-error').textContent = '';
  const request = {
    model: f.model.value, device: f.device.value.trim() || 'cpu', trace_level: f.trace_level.value,
    batch_sizes: f.batch_sizes.value.split(',').map((s) => Number(s.trim())).filter((n) => n > 0),
    inputs: { synthetic: f.synthetic.checked },
    measurement: { min_duration_ms: Number(f.min_duration_ms.value) },
  };
  if (f.framework.value.trim()) request.framework = f.framework.value.trim();
  const submission = { request, priority: Number(f.priority.value || 0) };
  // Constraints only when one is given: otherwise the server uses those the request implies (its framework, device).
  const gib = Number(f.min_gpu_memory_gib.value || 0);
  const extra = { gpu_pattern: f.gpu_pattern.value.trim(), host: f.host.value.trim(),
    framework_version: f.framework_version.value.trim() };
  if (gib > 0 || Object.values(extra).some((v) => v)) {
    submission.constraints = Object.assign({ framework: request.framework || '',
      device: request.device.startsWith('cuda') ? 'cuda' : 'cpu', min_gpu_memory_bytes: Math.round(gib * 2 ** 30) },
    extra);
  }
  try {
    await api('/jobs', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(submission) });
    loadJobs();
  } catch (err) { $('#submit-error').textContent = err.message; }
});

const GiB = 2 ** 30;
// "libtorch 2.11 · cuda · GPU *H100* ≥ 80 GiB · host gpu-7": the fields that are set.
function constraintsText(c) {
  if (!c) return '';
  const parts = [];
  if (c.framework) parts.push(c.framework + (c.framework_version ? ' ' + c.framework_version : ''));
  parts.push(c.device);
  if (c.gpu_pattern || c.min_gpu_memory_bytes > 0) {
    parts.push('GPU' + (c.gpu_pattern ? ' ' + c.gpu_pattern : '') +
      (c.min_gpu_memory_bytes > 0 ? ' ≥ ' + +(c.min_gpu_memory_bytes / GiB).toFixed(1) + ' GiB' : ''));
  }
  if (c.host) parts.push('host ' + c.host);
  return parts.join(' · ');
}

function jobButton(label, run) {
  const b = document.createElement('button');
  b.textContent = label; b.className = label;
  b.addEventListener('click', () => run().then(loadJobs).catch((err) => { $('#submit-error').textContent = err.message; }));
  return b;
}

let lastFinished = null;  // jobs finished when last seen; null before the first look
async function loadJobs() {
  try {
    const body = await api('/jobs');
    const tbody = $('#jobs tbody');
    tbody.replaceChildren();
    let finished = 0;
    for (const j of body.jobs) {
      const tr = document.createElement('tr');
      // A Slurm task's id is its ARRAYID_TASK (external_id); the queue's is its number.
      const id = j.external_id || String(j.id), queue = !j.engine || j.engine === 'queue';
      tr.dataset.id = id; tr.dataset.state = j.state; tr.dataset.engine = j.engine || 'queue';
      const r = j.request || {};
      tr.appendChild(cell(queue ? id : id + ' (' + j.engine + ')', 'num'));
      tr.appendChild(cell(j.state, 'state'));
      tr.appendChild(cell(r.model));
      tr.appendChild(cell((r.framework || "(manifest's)") + ' / ' + r.device));
      tr.appendChild(cell(constraintsText(j.constraints), 'constraints'));
      tr.appendChild(cell(j.priority, 'num priority'));
      tr.appendChild(cell(j.attempts + '/' + j.max_attempts, 'num attempts'));
      tr.appendChild(cell(j.agent && j.agent.name, 'agent'));
      const p = cell('');
      if (j.state === 'running' && j.progress && j.progress.total > 0) {
        const bar = document.createElement('progress');
        bar.max = j.progress.total; bar.value = j.progress.done;
        p.appendChild(bar); p.appendChild(document.createTextNode(' ' + (j.progress.phase || '')));
      }
      tr.appendChild(p);
      tr.appendChild(cell(j.state === 'queued' ? j.waiting_reason : '', 'wrap waiting'));
      tr.appendChild(cell(j.error && (j.error.field ? j.error.field + ': ' : '') + j.error.message, 'wrap error'));
      const ev = cell('');
      if (j.evaluation_id) {
        const a = document.createElement('a');
        a.href = '/api/v1/report?ids=' + j.evaluation_id; a.textContent = 'evaluation ' + j.evaluation_id;
        a.className = 'evaluation'; ev.appendChild(a);
      }
      tr.appendChild(ev);
      const c = cell('');
      if (j.state === 'queued' || j.state === 'running')
        c.appendChild(jobButton('cancel', () => api('/jobs/' + id + '/cancel', { method: 'POST' })));
      // Slurm retries its own tasks (max_attempts) and keeps its submissions in their folder: cancel only.
      if (queue && (j.state === 'failed' || j.state === 'cancelled'))
        c.appendChild(jobButton('retry', () => api('/jobs/' + id + '/retry', { method: 'POST' })));
      if (queue && j.state !== 'running')
        c.appendChild(jobButton('delete', () => api('/jobs/' + id, { method: 'DELETE' })));
      tr.appendChild(c);
      tbody.appendChild(tr);
      if (j.state !== 'queued' && j.state !== 'running') finished += 1;
    }
    // A job that finished since the last look has saved an evaluation: list it (not on the first look, so that the
    // list is not rebuilt under the user's first clicks).
    if (lastFinished !== null && finished !== lastFinished) loadEvaluations();
    lastFinished = finished;
  } catch (err) { $('#submit-error').textContent = err.message; }
}

async function loadAgents() {
  try {
    const body = await api('/agents');
    const tbody = $('#agents tbody');
    tbody.replaceChildren();
    for (const a of body.agents) {
      const tr = document.createElement('tr');
      tr.dataset.id = a.id; tr.dataset.state = a.state;
      tr.appendChild(cell(a.name));
      tr.appendChild(cell(a.state, 'state'));
      tr.appendChild(cell(a.hostname));
      tr.appendChild(cell((a.frameworks || []).map((f) => f.name + ' ' + f.version).join(', '), 'wrap'));
      tr.appendChild(cell((a.gpus || []).map((g) => g.name + ' (' + +(g.memory_bytes / GiB).toFixed(1) + ' GiB)')
        .join(', ') || 'CPU only', 'wrap'));
      tr.appendChild(cell(a.current_job, 'num'));
      tr.appendChild(cell(a.jobs_done, 'num'));
      tr.appendChild(cell(a.jobs_failed, 'num'));
      tr.appendChild(cell(a.last_heartbeat_at));
      tbody.appendChild(tr);
    }
    $('#agents-empty').textContent = body.agents.length ? '' :
      'No agents: on an SQLite store this server runs submitted evaluations itself. Agents (xsp agent) take jobs ' +
      'from a shared PostgreSQL store (docs/deploy.md).';
    $('#agents-error').textContent = '';
  } catch (err) { $('#agents-error').textContent = err.message; }
}

loadModels().catch((err) => { $('#models-problems').textContent = err.message; });
loadEvaluations();
loadJobs();
loadAgents();
setInterval(loadJobs, 1000);
setInterval(loadAgents, 5000);
</script>
</body></html>
)html";
}

}  // namespace xsp::detail
