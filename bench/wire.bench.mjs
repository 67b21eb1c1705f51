// Benchmark of subvisor/wire's decode+validate throughput against plain JSON.parse of the same lines.
// Run alone with `node bench/wire.bench.mjs` (after `npx tsup`), or through bench/run.mjs via `run()`.
import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { decode } from 'subvisor/wire';

const SMALL_TARGET = 0.85;
const DISTINCT_LINES = 1000;

/**
 * Blocks per measurement by run mode; `smoke` only checks that the benchmark runs. One block is one
 * pass of JSON.parse and one of decode over the same lines, about a millisecond each.
 */
function sizes(options) {
  if (options?.smoke) return { warmup: 5, blocks: 10 };
  if (options?.quick) return { warmup: 200, blocks: 600 };
  return { warmup: 200, blocks: 1000 };
}

/** Realistic ~200-byte streaming lines: text deltas with multi-byte characters, distinct per seq. */
function smallLines() {
  const deltas = ['Größe prüfen — ', 'naïve café ✓ ', '日本語のテキスト ', 'emoji 🚀 done, ', 'plain ascii text '];
  const lines = [];
  for (let seq = 1; seq <= DISTINCT_LINES; seq++) {
    const delta = `${deltas[seq % deltas.length]}${seq}`;
    lines.push(
      JSON.stringify({
        v: 1,
        seq,
        type: 'assistant-text-delta',
        run: 'run-3f9c2a',
        timestamp: '2026-11-29T12:00:00Z',
        'content-index': 0,
        delta,
        summary: delta,
        agent: 'worker',
      }),
    );
  }
  return lines;
}

/** Realistic ~12 KB lines: tool results at the transport payload bound, with multi-byte text. */
function largeLines() {
  const chunk = 'line of file output with ümlauts, a → arrow and 漢字 mixed in; ';
  const lines = [];
  for (let seq = 1; seq <= DISTINCT_LINES / 10; seq++) {
    const content = `${seq}: ${chunk.repeat(160)}`;
    lines.push(
      JSON.stringify({
        v: 1,
        seq,
        type: 'tool-result',
        run: 'run-3f9c2a',
        timestamp: '2026-11-29T12:00:00Z',
        name: 'read',
        id: `call-${seq}`,
        'tool-call-id': `call-${seq}`,
        'is-error?': false,
        'duration-seconds': 0.012,
        result: { content: [{ type: 'text', text: content }], details: { path: 'src/index.ts', lines: 160 } },
        summary: content.slice(0, 60),
        'transport-truncated?': true,
      }),
    );
  }
  return lines;
}

function timeParse(lines) {
  let sink = 0;
  const start = process.hrtime.bigint();
  for (let i = 0; i < lines.length; i++) sink += JSON.parse(lines[i]).seq;
  const elapsed = Number(process.hrtime.bigint() - start);
  if (sink === -1) console.log('unreachable');
  return elapsed;
}

function timeDecode(lines) {
  let sink = 0;
  const start = process.hrtime.bigint();
  for (let i = 0; i < lines.length; i++) {
    const result = decode(lines[i], 'event');
    if (!result.ok) throw new Error(`benchmark line rejected: ${result.rejection.reason}`);
    sink += result.message.seq;
  }
  const elapsed = Number(process.hrtime.bigint() - start);
  if (sink === -1) console.log('unreachable');
  return elapsed;
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
};

/**
 * Alternates millisecond-sized blocks of JSON.parse and decode over the same lines (swapping which goes
 * first), after a warm-up, so load from other processes on a shared machine hits both alike. The ratio
 * is the median of the per-block ratios; the rates are the median per-block rates.
 */
function measure(lines, { warmup, blocks }) {
  for (let b = 0; b < warmup; b++) {
    timeParse(lines);
    timeDecode(lines);
  }
  const parseRates = [];
  const decodeRates = [];
  const ratios = [];
  for (let b = 0; b < blocks; b++) {
    let parseNs;
    let decodeNs;
    if (b % 2 === 0) {
      parseNs = timeParse(lines);
      decodeNs = timeDecode(lines);
    } else {
      decodeNs = timeDecode(lines);
      parseNs = timeParse(lines);
    }
    parseRates.push((lines.length * 1e9) / parseNs);
    decodeRates.push((lines.length * 1e9) / decodeNs);
    ratios.push(parseNs / decodeNs);
  }
  return { parse: median(parseRates), decode: median(decodeRates), ratio: median(ratios) };
}

function row(metric, rates, target) {
  const { ratio } = rates;
  return {
    bench: 'wire decode',
    metric,
    value: Math.round(rates.decode),
    unit: 'lines/s',
    baseline: 'JSON.parse',
    baselineValue: Math.round(rates.parse),
    ratio: Math.round(ratio * 1000) / 1000,
    target: target === undefined ? 'none (reported)' : `ratio >= ${target}`,
    met: target === undefined ? null : ratio >= target,
  };
}

/**
 * Measures both line sizes; the rows follow the shared bench table's shape. `options.quick` and
 * `options.smoke` (as bench/run.mjs passes them) shorten the run.
 */
export async function run(options = {}) {
  const size = sizes(options);
  const small = smallLines();
  const large = largeLines();
  const avg = (lines) => Math.round(lines.reduce((sum, line) => sum + Buffer.byteLength(line), 0) / lines.length);
  return [
    row(`decode+validate, ${avg(small)} B lines`, measure(small, size), SMALL_TARGET),
    row(`decode+validate, ${Math.round(avg(large) / 1024)} KB lines`, measure(large, size)),
  ];
}

const invokedDirectly = process.argv[1] !== undefined && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href;
if (invokedDirectly) {
  for (const r of await run()) {
    console.log(
      `${r.bench} | ${r.metric} | ${r.value} ${r.unit} | ${r.baseline} ${r.baselineValue} ${r.unit} | ratio ${r.ratio} | ${r.target} | ${r.met === null ? '-' : r.met ? 'met' : 'MISSED'}`,
    );
  }
}
