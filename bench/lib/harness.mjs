// Shared benchmark plumbing: result rows, statistics, timing helpers and fresh-process isolation.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** Repository root (the directory holding package.json). */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Nanoseconds from process.hrtime.bigint() as milliseconds (a Number). */
export function nsToMs(ns) {
  return Number(ns) / 1e6;
}

/** Monotonic clock in milliseconds. */
export function nowMs() {
  return nsToMs(process.hrtime.bigint());
}

/**
 * Picks a size by run mode: `smoke` (tiny, for the plumbing test), `quick` (a fast, noisier run) or
 * `full` (the published figures).
 */
export function sized(options, { full, quick, smoke }) {
  if (options?.smoke) return smoke;
  if (options?.quick) return quick;
  return full;
}

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Value at percentile p (0..100) of numbers, by nearest rank. */
export function percentile(values, p) {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank];
}

export function median(values) {
  return percentile(values, 50);
}

/**
 * One result row. `ratio` is always value / baselineValue, so a reader needs one rule for every row;
 * targets on the ratio say which direction is better ("ratio <= 0.1" for latency, ">= 0.5" for rates).
 */
export function row({ bench, metric, value, unit, baseline = null, baselineValue = null, target = null, met = null }) {
  const ratio =
    baselineValue === null || !Number.isFinite(baselineValue) || baselineValue === 0 || !Number.isFinite(value)
      ? null
      : value / baselineValue;
  return { bench, metric, value, unit, baseline, baselineValue, ratio, target, met };
}

/**
 * Runs `fnName` exported by `moduleUrl` with `arg` in a new Node process (its own heap and RSS, so memory
 * figures of one case are not inflated by an earlier one; `execArgv` adds Node flags) and resolves with its
 * JSON result.
 */
export function inFreshProcess(moduleUrl, fnName, arg, { timeoutMs = 120_000, execArgv = [] } = {}) {
  return new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(new URL('./fresh-process.mjs', import.meta.url)), [], {
      execArgv: ['--expose-gc', ...execArgv],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    let result = null;
    let settled = false;
    const finish = (error, value) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (error) reject(error);
      else resolve(value);
    };
    const killAfter = (ms, message) =>
      setTimeout(() => {
        child.kill('SIGKILL');
        finish(new Error(message));
      }, ms);
    let timer = killAfter(timeoutMs, `${fnName} in a fresh process took longer than ${timeoutMs} ms`);
    child.on('message', (message) => {
      result = message;
      // A process that does not exit on its own after its result still holds a handle (timer, watcher,
      // child process): that is a leak worth failing for, not something to hide with a kill.
      clearTimeout(timer);
      timer = killAfter(10_000, `${fnName}: the fresh process did not exit after its result (leaked handle?)`);
    });
    child.on('error', (error) => finish(error));
    child.on('exit', (code, signal) => {
      if (result === null) finish(new Error(`fresh process for ${fnName} exited (${signal ?? code}) without a result`));
      else if (result.ok) finish(null, result.value);
      else finish(new Error(`${fnName} failed in a fresh process: ${result.error}`));
    });
    child.send({ moduleUrl, fnName, arg });
  });
}

/** Samples this process's RSS every `intervalMs` (and on demand) and remembers the peak. */
export function rssSampler(intervalMs = 5) {
  let peak = process.memoryUsage.rss();
  const sample = () => {
    const rss = process.memoryUsage.rss();
    if (rss > peak) peak = rss;
  };
  const timer = setInterval(sample, intervalMs);
  return {
    sample,
    stop() {
      clearInterval(timer);
      sample();
      return peak;
    },
  };
}

/** Forces a full collection when the process runs with --expose-gc (fresh processes do). */
export function collectGarbage() {
  if (typeof globalThis.gc === 'function') {
    globalThis.gc();
    globalThis.gc();
  }
}
