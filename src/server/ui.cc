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
progress { width: 10em; }
</style></head>
<body>
<header><h1>XSP</h1><span class="muted">profiling and benchmarking across the stack ·
<a href="/api/v1">REST API</a></span>
<label>token for writes <input type="text" id="token" size="16" placeholder="(none)"></label></header>

<section id="evaluations-section">
<h2>Evaluations</h2>
<form class="inline" id="filters">
<label>model <input type="text" name="model" size="12"></label>
<label>framework <input type="text" name="framework" size="10"></label>
<label>device <input type="text" name="device" size="8" placeholder="cpu, cuda"></label>
<label>host <input type="text" name="host" size="10"></label>
<label>since <input type="text" name="since" size="12" placeholder="2026-11-01"></label>
<label>until <input type="text" name="until" size="12"></label>
<button type="submit" id="filter">filter</button>
</form>
<p id="evaluations-error" class="error"></p>
<table id="evaluations"><thead><tr><th></th><th>id</th><th>created</th><th>model</th><th>framework</th>
<th>device</th><th>host</th><th>scenario</th><th>trace level</th><th>batch sizes</th><th>runs</th><th>status</th>
<th></th></tr></thead><tbody></tbody></table>
<p><button id="compare" disabled>compare selected</button> <span class="muted" id="selected-count">select two or
more</span></p>
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

async function loadEvaluations() {
  const params = new URLSearchParams();
  for (const el of $('#filters').elements) if (el.name && el.value.trim()) params.set(el.name, el.value.trim());
  $('#evaluations-error').textContent = '';
  try {
    const body = await api('/evaluations' + (params.toString() ? '?' + params : ''));
    const tbody = $('#evaluations tbody');
    tbody.replaceChildren();
    for (const e of body.evaluations) {
      const tr = document.createElement('tr');
      tr.dataset.id = e.id;
      const box = document.createElement('input');
      box.type = 'checkbox';
      box.checked = selected.has(e.id);
      box.addEventListener('change', () => { box.checked ? selected.add(e.id) : selected.delete(e.id); updateCompare(); });
      const pick = cell(''); pick.appendChild(box); tr.appendChild(pick);
      tr.appendChild(cell(e.id, 'num'));
      for (const k of ['created_at', 'model', 'framework', 'device', 'host', 'scenario', 'trace_level']) tr.appendChild(cell(e[k]));
      tr.appendChild(cell((e.batch_sizes || []).join(',')));
      tr.appendChild(cell(e.runs, 'num'));
      tr.appendChild(cell(e.status));
      const open = cell('');
      const a = document.createElement('a');
      a.href = '/api/v1/report?ids=' + e.id; a.textContent = 'open'; a.className = 'open';
      open.appendChild(a); tr.appendChild(open);
      tbody.appendChild(tr);
    }
    updateCompare();
  } catch (err) { $('#evaluations-error').textContent = err.message; }
}
$('#filters').addEventListener('submit', (ev) => { ev.preventDefault(); loadEvaluations(); });

async function loadModels() {
  const body = await api('/models');
  const tbody = $('#models tbody');
  const select = $('#submit-model');
  for (const m of body.models) {
    const tr = document.createElement('tr');
    tr.appendChild(cell(m.name)); tr.appendChild(cell(m.version));
    tr.appendChild(cell((m.frameworks || []).map((f) => f.name).join(', ')));
    tr.appendChild(cell(m.description));
    tbody.appendChild(tr);
    const o = document.createElement('option'); o.textContent = m.name; select.appendChild(o);
  }
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
      tr.dataset.id = j.id; tr.dataset.state = j.state;
      const r = j.request || {};
      tr.appendChild(cell(j.id, 'num'));
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
        c.appendChild(jobButton('cancel', () => api('/jobs/' + j.id + '/cancel', { method: 'POST' })));
      if (j.state === 'failed' || j.state === 'cancelled')
        c.appendChild(jobButton('retry', () => api('/jobs/' + j.id + '/retry', { method: 'POST' })));
      if (j.state !== 'running')
        c.appendChild(jobButton('delete', () => api('/jobs/' + j.id, { method: 'DELETE' })));
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
