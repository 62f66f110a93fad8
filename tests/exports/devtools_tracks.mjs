// Reads a Chrome Trace Event export with Chrome DevTools' own trace engine (@paulirish/trace_engine, the
// Performance panel's parser, pinned in tools/trace-check) and checks that each GPU stream is its own track:
//   node tests/exports/devtools_tracks.mjs TRACE.json MIN_STREAMS
// For every GPU process (pid != the host's 4194304) it prints one line per thread (= stream) and checks:
//   - at least MIN_STREAMS stream tracks in all, each named "stream N" by the thread_name metadata;
//   - the engine kept every complete event the file puts on that (pid, tid);
//   - nothing nests on a stream track (tree depth 1): work on one CUDA stream runs in order, so nesting there means
//     the viewer merged tracks (the defect of issue 11: one track holding 444 wrongly nested entries). A stream
//     with ops replayed from a CUDA graph (gpu_user_annotation events, docs/cuda-graphs.md) nests them above its
//     kernels: there the kernels alone must not nest (no kernel, copy or set inside another).
// Exit 0 when all hold, 1 with the failed checks listed, 2 on a usage or parse error.
import fs from 'node:fs';
import path from 'node:path';
import {fileURLToPath} from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const engineDir = path.join(here, '..', '..', 'tools', 'trace-check', 'node_modules', '@paulirish', 'trace_engine');
const kHostPid = 4194304;  // kChromeHostPid, include/xsp/trace/export.h

const [file, minStreamsArg] = process.argv.slice(2);
const minStreams = Number.parseInt(minStreamsArg ?? '1', 10);
if (!file || !Number.isInteger(minStreams) || minStreams < 1) {
  console.error('usage: devtools_tracks.mjs TRACE.json MIN_STREAMS');
  process.exit(2);
}
if (!fs.existsSync(engineDir)) {
  console.error(`${engineDir} is missing: run scripts/install-deps.sh (npm ci in tools/trace-check)`);
  process.exit(77);  // CTest's SKIP_RETURN_CODE
}
// The engine measures boxes with DOMRect, which Node lacks; only its geometry methods are used.
globalThis.DOMRect ??= class DOMRect {
  constructor(x = 0, y = 0, width = 0, height = 0) { Object.assign(this, {x, y, width, height}); }
  static fromRect(r = {}) { return new DOMRect(r.x, r.y, r.width, r.height); }
};
const Trace = await import(path.join(engineDir, 'models', 'trace', 'trace.js'));

let events;
try {
  const json = JSON.parse(fs.readFileSync(file, 'utf8'));
  events = json.traceEvents ?? json;
  if (!Array.isArray(events)) throw new Error('no traceEvents array');
} catch (e) {
  console.error(`${file}: not a Chrome trace: ${e.message}`);
  process.exit(2);
}

const model = Trace.TraceModel.Model.createWithAllHandlers();
await model.parse(events);
const parsed = model.parsedTrace().data;
const failures = [];
const expect = (ok, what) => { if (!ok) failures.push(what); };

// What the file itself puts on each GPU track: complete events per "pid/tid", and the replayed ops among them.
const inFile = new Map();
const annotations = new Map();
const kDeviceWork = new Set(['kernel', 'gpu_memcpy', 'gpu_memset']);
for (const e of events) {
  if (e.ph === 'X' && e.pid !== kHostPid) {
    const key = `${e.pid}/${e.tid}`;
    inFile.set(key, (inFile.get(key) ?? 0) + 1);
    if (e.cat === 'gpu_user_annotation') annotations.set(key, (annotations.get(key) ?? 0) + 1);
  }
}
// Whether any kernel, copy or set of a track lies inside another one of the same track (they run in order).
const deviceWorkNests = (entries) => {
  const work = entries.filter(e => e.ph === 'X' && kDeviceWork.has(e.cat)).sort((a, b) => a.ts - b.ts);
  for (let i = 1; i < work.length; ++i) {
    if (work[i].ts + (work[i].dur ?? 0) <= work[i - 1].ts + (work[i - 1].dur ?? 0) && work[i].ts > work[i - 1].ts) return true;
  }
  return false;
};

let streams = 0;
for (const [pid, proc] of parsed.Renderer.processes) {
  if (pid === kHostPid) continue;
  for (const [tid, thread] of proc.threads) {
    const complete = thread.entries.filter(e => e.ph === 'X').length;
    const depth = thread.tree?.maxDepth ?? 0;
    const want = inFile.get(`${pid}/${tid}`) ?? 0;
    console.log(`pid ${pid} tid ${tid} "${thread.name}": ${complete} entries (file: ${want}), tree depth ${depth}`);
    ++streams;
    expect(/^stream \d+$/.test(thread.name ?? ''), `pid ${pid} tid ${tid}: thread name "${thread.name}", expected "stream N"`);
    expect(complete === want, `pid ${pid} tid ${tid}: DevTools kept ${complete} of the file's ${want} events`);
    if ((annotations.get(`${pid}/${tid}`) ?? 0) === 0) {
      expect(depth <= 1, `pid ${pid} tid ${tid}: entries nest (tree depth ${depth}) on one stream`);
    } else {
      expect(!deviceWorkNests(thread.entries), `pid ${pid} tid ${tid}: kernels nest inside kernels on one stream`);
    }
  }
}
const fileTracks = inFile.size;
console.log(`${streams} GPU stream tracks in DevTools, ${fileTracks} in the file`);
expect(streams >= minStreams, `${streams} GPU stream tracks, expected at least ${minStreams}`);
expect(streams === fileTracks, `DevTools shows ${streams} GPU tracks, the file has ${fileTracks}`);
for (const f of failures) console.error(`FAIL: ${f}`);
process.exit(failures.length === 0 ? 0 : 1);
