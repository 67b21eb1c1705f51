// `npm run bench`: builds dist/ when stale, runs every benchmark in its own Node process, prints the table,
// writes bench/results.json, and fails loudly on surviving child processes or leftover temp files.
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { inFreshProcess, ROOT } from './lib/harness.mjs';
import { survivorsAfter, TAG_VARIABLE } from './lib/hygiene.mjs';
import { formatTable } from './lib/table.mjs';
import { writeCharts } from './charts.mjs';

const BENCHES = ['latency', 'throughput', 'backpressure', 'scale', 'spawn', 'watchdog', 'pool', 'wire', 'queue', 'drivers', 'observe', 'limits', 'warm', 'codex', 'claude-code', 'acp'];
const BENCH_TIMEOUT_MS = 240_000;
/** The pool benchmark starts 2000 children (1000 per side), the scale one 1000 per side: on a loaded machine they need longer. */
const BENCH_TIMEOUTS_MS = { pool: 1_200_000, queue: 600_000, backpressure: 1_200_000, scale: 2_400_000, codex: 900_000, 'claude-code': 900_000, acp: 900_000 };
const BUILD_INPUTS = ['src', 'tsup.config.ts', 'package.json', 'tsconfig.json'];
const BUILD_OUTPUTS = ['dist/index.js', 'dist/wire/index.js', 'dist/testing/index.js', 'dist/testing/fake-child.js'];

function usage() {
  return [
    'usage: node bench/run.mjs [--quick | --smoke] [--only name,name] [--out file] [--no-build]',
    `  benchmarks: ${BENCHES.join(', ')}`,
    '  --quick   fewer events, fewer children, shorter windows (figures are noisier)',
    '  --smoke   tiny sizes: checks that every benchmark runs, figures mean nothing',
    '  --only    run only these benchmarks',
    '  --out     where to write the JSON results (default bench/results.json)',
    '  --no-build  use dist/ as it is (by default it is rebuilt when missing or older than src/)',
  ].join('\n');
}

function parseArgs(argv) {
  const options = { quick: false, smoke: false, build: true, only: BENCHES, out: join(ROOT, 'bench', 'results.json') };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--quick') options.quick = true;
    else if (arg === '--smoke') options.smoke = true;
    else if (arg === '--only' && i + 1 < argv.length) options.only = argv[++i].split(',').filter(Boolean);
    else if (arg === '--out' && i + 1 < argv.length) options.out = argv[++i];
    else if (arg === '--no-build') options.build = false;
    else if (arg === '--help' || arg === '-h') {
      console.log(usage());
      process.exit(0);
    } else {
      console.error(`unknown argument: ${arg}\n${usage()}`);
      process.exit(2);
    }
  }
  const unknown = options.only.filter((name) => !BENCHES.includes(name));
  if (unknown.length > 0) {
    console.error(`unknown benchmark: ${unknown.join(', ')}\n${usage()}`);
    process.exit(2);
  }
  return options;
}

function newestMtime(path) {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = stat.mtimeMs;
  for (const entry of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, entry)));
  return newest;
}

/** Builds with tsup when an output is missing or older than any build input. */
function ensureBuilt() {
  const outputs = BUILD_OUTPUTS.map((file) => join(ROOT, file));
  const inputsChanged = Math.max(...BUILD_INPUTS.map((file) => newestMtime(join(ROOT, file))));
  const stale = outputs.some((file) => !existsSync(file) || statSync(file).mtimeMs < inputsChanged);
  if (!stale) return;
  console.log('building dist/ (missing or older than src/) ...');
  try {
    execFileSync(join(ROOT, 'node_modules', '.bin', 'tsup'), ['--silent'], { cwd: ROOT, stdio: 'inherit' });
  } catch {
    console.error('bench: the build failed (see above); the benchmarks need a built dist/');
    process.exit(1);
  }
}

function machine() {
  const cpus = os.cpus();
  return {
    cpus: cpus.length,
    cpuModel: cpus[0]?.model ?? 'unknown',
    totalMemoryMB: Math.round(os.totalmem() / 2 ** 20),
    node: process.version,
    platform: `${process.platform} ${os.release()} ${process.arch}`,
    loadAverageAtStart: os.loadavg().map((load) => Number(load.toFixed(2))),
  };
}

async function main() {
  const options = parseArgs(process.argv.slice(2));
  if (options.build) ensureBuilt();

  // Every process started from here inherits the tag (survivor check) and the private TMPDIR (leak check).
  const tag = randomUUID();
  const tmpRoot = mkdtempSync(join(os.tmpdir(), 'subvisor-bench-'));
  process.env[TAG_VARIABLE] = tag;
  process.env.TMPDIR = tmpRoot;

  const info = machine();
  const started = Date.now();
  console.log(
    `subvisor benchmarks${options.smoke ? ' (smoke)' : options.quick ? ' (quick)' : ''}: ${info.cpus} x ${info.cpuModel}, node ${info.node}, load ${info.loadAverageAtStart.join(' ')}`,
  );

  const rows = [];
  const errors = [];
  for (const name of options.only) {
    const file = join(ROOT, 'bench', `${name}.bench.mjs`);
    const benchStarted = Date.now();
    process.stdout.write(`- ${name} ... `);
    try {
      if (!existsSync(file)) throw new Error(`${file} does not exist`);
      const benchRows = await inFreshProcess(pathToFileURL(file).href, 'run', { quick: options.quick, smoke: options.smoke }, {
        timeoutMs: BENCH_TIMEOUTS_MS[name] ?? BENCH_TIMEOUT_MS,
      });
      rows.push(...benchRows);
      console.log(`${benchRows.length} rows in ${((Date.now() - benchStarted) / 1000).toFixed(1)} s`);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      errors.push({ bench: name, error: message });
      console.log('FAILED');
      console.error(message);
    }
  }

  const survivors = await survivorsAfter(tag, 3000);
  for (const survivor of survivors) {
    errors.push({ bench: 'hygiene', error: `process survived the benchmarks: ${survivor.pid} ${survivor.cmdline}` });
    try {
      process.kill(survivor.pid, 'SIGKILL');
    } catch {
      // it went away on its own
    }
  }
  const leftovers = readdirSync(tmpRoot);
  for (const entry of leftovers) {
    errors.push({ bench: 'hygiene', error: `temp file left behind: ${join(tmpRoot, entry)}` });
  }
  rmSync(tmpRoot, { recursive: true, force: true });

  const durationS = (Date.now() - started) / 1000;
  info.loadAverageAtEnd = os.loadavg().map((load) => Number(load.toFixed(2)));
  console.log(`\n${formatTable(rows)}\n`);
  const met = rows.filter((r) => r.met === true).length;
  const missed = rows.filter((r) => r.met === false);
  console.log(
    `targets met: ${met}/${met + missed.length}; total ${durationS.toFixed(1)} s; load average ${info.loadAverageAtStart[0]} at start, ${info.loadAverageAtEnd[0]} at end (${info.cpus} cores)`,
  );
  for (const r of missed) console.log(`  missed: ${r.bench} ${r.metric} (${r.target})`);

  writeFileSync(
    options.out,
    `${JSON.stringify({ date: new Date().toISOString(), machine: info, options: { quick: options.quick, smoke: options.smoke }, durationS, rows, errors }, null, 2)}\n`,
  );
  console.log(`results written to ${options.out}`);
  // The table as SVG charts, one per benchmark that ran (docs/performance.md shows them): never with --smoke's figures.
  if (!options.smoke) console.log(`charts written: ${writeCharts(rows).length} in docs/performance/`);

  if (errors.length > 0) {
    console.error(`\n${errors.length} error(s):`);
    for (const e of errors) console.error(`  [${e.bench}] ${e.error}`);
    process.exitCode = 1;
  }
}

await main();
