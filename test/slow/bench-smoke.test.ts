// Smoke test of `npm run bench`: every process benchmark runs end to end at tiny sizes and writes well-formed rows.
// It checks the plumbing (and the leak checks of bench/run.mjs), never the speed. It takes minutes on 2 cores, so it
// is not part of `npm test`: `npm run test:slow` runs it, and .ci/run does after the README's test command.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haveRedis } from '../helpers/redis-server.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
// Made in a hook, not while vitest collects: a run that only lists or filters the tests runs no hook to remove it.
let outDir: string;
beforeAll(() => {
  outDir = mkdtempSync(join(tmpdir(), 'bench-smoke-'));
});
afterAll(() => rmSync(outDir, { recursive: true, force: true }));

interface BenchRow {
  bench: string;
  metric: string;
  value: number;
  unit: string;
  baseline: string | null;
  baselineValue: number | null;
  ratio: number | null;
  target: string | null;
  met: boolean | null;
}

describe('bench/run.mjs --smoke', () => {
  // The wire benchmark has no size knob (a few seconds of pure CPU): it is left to `npm run bench`. Groups of
  // one or two, so that each fits its time bound on a loaded machine (four in one group took 170 s at load 40).
  // The queue's needs redis-server; without it the benchmark says so and writes no row.
  it.each([[['latency', 'throughput']], [['scale', 'spawn']], [['pool']], [['queue']], [['observe']]])('runs %j, reaps its children and writes rows with baselines', async (benches) => {
    const out = join(outDir, `results-${benches.join('-')}.json`);
    // run.mjs exits non-zero on any benchmark error, surviving process or leftover temp file.
    await promisify(execFile)(
      process.execPath,
      ['bench/run.mjs', '--smoke', '--no-build', '--only', benches.join(','), '--out', out],
      { cwd: root, timeout: 170_000 },
    );
    const results = JSON.parse(readFileSync(out, 'utf8')) as {
      machine: { cpus: number; node: string };
      errors: unknown[];
      rows: BenchRow[];
    };
    expect(results.errors).toEqual([]);
    expect(results.machine.cpus).toBeGreaterThan(0);
    expect(results.machine.node).toBe(process.version);
    const skipped = benches[0] === 'queue' && !haveRedis();
    expect(new Set(results.rows.map((r) => r.bench))).toEqual(new Set(skipped ? [] : benches));
    for (const r of results.rows) {
      expect(Number.isFinite(r.value), `${r.bench} ${r.metric} value`).toBe(true);
      expect(r.baseline, `${r.bench} ${r.metric} baseline`).toEqual(expect.any(String));
      expect(Number.isFinite(r.baselineValue), `${r.bench} ${r.metric} baseline value`).toBe(true);
      // A smoke-sized case can measure a baseline of exactly 0 (no RSS growth, no CPU tick in its short
      // window): that row has no ratio rather than an infinite one.
      if (r.baselineValue === 0) expect(r.ratio).toBeNull();
      else expect(r.ratio).toBeCloseTo(r.value / (r.baselineValue as number), 6);
      expect(r.met === null || typeof r.met === 'boolean').toBe(true);
      expect(r.met === null).toBe(r.target === null);
    }
    // The run itself may take up to 170 s on a loaded machine: the test's own bound must be longer than that.
  }, 180_000);
});
