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

/// What a person reads on a report page of `kind` (sweep | scenario | generation | compare | gpu), from the rendered
/// SVG text and the HTML, each failure to `fail`: the headline cards; every analysis section has a table (the
/// analyses without rows are one list, not sections); where drawn, A1's x axis holds integer batch sizes and a
/// legend names its lines, the layer bars (A3) carry layer names, largest first; the timeline's boxes carry names
/// on several lanes, one per track and depth; a generation report has G1–G3 and TTFT/TPOT/ITL distributions; a
/// comparison says its ratio in words.
export async function seeWhatAPersonSees(page, kind, fail) {
  const seen = await page.evaluate(() => {
    const chartOf = (article) => article.querySelector('div.chart svg');
    const axisLabels = (svg, axis) =>
      [...svg.querySelectorAll('g.role-axis')]
        .filter((g) => (g.getAttribute('aria-label') || '').startsWith(axis))
        .flatMap((g) => [...g.querySelectorAll('g.role-axis-label text')].map((t) => t.textContent));
    const articles = [...document.querySelectorAll('article.analysis')].map((a) => ({
      id: a.querySelector('h4').textContent.split(' ')[0],
      hasTable: !!a.querySelector('table'),
      svg: !!chartOf(a),
      x: chartOf(a) ? axisLabels(chartOf(a), 'X-axis') : [],
      y: chartOf(a) ? axisLabels(chartOf(a), 'Y-axis') : [],
      legend: chartOf(a) ? [...chartOf(a).querySelectorAll('g.role-legend-label text')].map((t) => t.textContent) : [],
    }));
    const timelines = [...document.querySelectorAll('figure')]
      .filter((f) => /timeline|decode step/i.test(f.querySelector('figcaption')?.textContent || ''))
      .map((f) => {
        const svg = f.querySelector('svg');
        return {
          lanes: svg ? axisLabels(svg, 'Y-axis') : [],
          names: svg ? [...svg.querySelectorAll('g.role-mark text')].map((t) => t.textContent).filter((t) => t) : [],
          search: !!f.parentElement.querySelector('input[name="search"], .vega-bindings input'),
        };
      });
    return {
      cards: document.querySelectorAll('.headline .card').length,
      articles,
      notShown: document.querySelectorAll('.not-shown li').length,
      timelines,
      figures: [...document.querySelectorAll('figcaption')].map((f) => f.textContent),
      verdicts: [...document.querySelectorAll('ul.verdicts li')].map((li) => li.textContent),
    };
  });
  const need = (ok, message) => { if (!ok) fail(`${kind}: ${message}`); };
  need(seen.cards >= 2, `a headline of at least 2 cards, got ${seen.cards}`);
  for (const a of seen.articles) need(a.hasTable, `analysis ${a.id} is a section without a table`);
  const a1 = seen.articles.find((a) => a.id === 'A1' && a.svg);
  if (kind === 'sweep' || kind === 'compare') {
    need(a1, 'an A1 chart');
    if (a1) {
      need(a1.x.length >= 2 && a1.x.every((t) => /^\d+$/.test(t)), `A1's x ticks are batch sizes: ${a1.x}`);
      need(a1.legend.some((t) => /latency/.test(t)) && a1.legend.some((t) => /throughput/.test(t)),
           `A1's legend names latency and throughput: ${a1.legend}`);
    }
    const a3 = seen.articles.find((a) => a.id === 'A3' && a.svg);
    need(a3, 'an A3 chart');
    if (a3) need(a3.y.length >= 2 && a3.y.every((t) => /^(\d+ \S+|other \(\d+\))/.test(t)),
                 `A3's bars are named "index name": ${a3.y.slice(0, 5)}`);
  }
  if (kind !== 'generation' && kind !== 'scenario') {
    need(seen.timelines.length >= 1, 'a timeline');
    for (const t of seen.timelines) {
      need(t.lanes.length >= 2, `timeline lanes per track and depth: ${t.lanes}`);
      need(t.names.length >= 1, 'names inside the timeline boxes');
      need(t.search, 'a search box on the timeline');
    }
  }
  if (kind === 'gpu') need(seen.timelines.some((t) => t.lanes.some((l) => /GPU \d+ stream/.test(l))), 'a GPU lane');
  if (kind === 'generation') {
    for (const g of ['G1', 'G2', 'G3'])
      need(seen.articles.some((a) => a.id === g && a.svg), `${g} drawn`);
    for (const m of ['TTFT', 'TPOT', 'ITL'])
      need(seen.figures.some((f) => f.startsWith(m)), `a ${m} distribution`);
  }
  if (kind === 'compare')
    need(seen.verdicts.length >= 1 && seen.verdicts.every((v) => /^#\d+ is (\d+\.\d+× (slower|faster) than|not significantly different from) #\d+ at batch size \d+/.test(v)),
         `the comparison in words: ${seen.verdicts}`);
  return seen;
}
