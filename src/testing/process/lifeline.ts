// Every fake program's lifelines: parent death, the safety cap, a blocking sleep and a watcher that notice them.
import { readlinkSync } from 'node:fs';
import { CHILD_ENV } from '../child-env.js';

/** This process's pid namespace (`pid:[inode]`), or undefined where it cannot be read (no /proc). */
export function pidNamespace(): string | undefined {
  try {
    return readlinkSync('/proc/self/ns/pid');
  } catch {
    return undefined;
  }
}

/** How often a blocking sleep looks up to check that the parent is still there. */
const SLEEP_SLICE_MS = 50;

const sleepCell = new Int32Array(new SharedArrayBuffer(4));

/** Blocks the whole process (the child does one thing at a time, like an agent stuck in a tool). */
function blockFor(ms: number): void {
  if (ms > 0) Atomics.wait(sleepCell, 0, 0, ms);
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export class Lifeline {
  readonly started = Date.now();
  private readonly initialParent = process.ppid;

  /**
   * `ownerPid`: the process that made this fake child (see CHILD_ENV.ownerPid), watched beside the parent.
   * `outlivesParent`: neither is watched (a durable run's child goes on without them); only `maxLifeMs` caps it.
   */
  private readonly ownerPid: number | undefined;

  constructor(
    private readonly maxLifeMs: number,
    ownerPid?: number,
    private readonly outlivesParent = false,
  ) {
    // In another pid namespace (a sandbox) the owner's pid names nobody, or someone else.
    const ownerNamespace = process.env[CHILD_ENV.ownerPidNamespace];
    this.ownerPid = ownerNamespace !== undefined && ownerNamespace !== pidNamespace() ? undefined : ownerPid;
  }

  /** Milliseconds since the child started. */
  now(): number {
    return Date.now() - this.started;
  }

  /**
   * The parent died (the parent pid changed: the child was re-parented), or the process that made this fake
   * child is gone (this also covers a parent that died before the child could record its pid).
   */
  parentGone(): boolean {
    if (this.outlivesParent) return false;
    return process.ppid !== this.initialParent || (this.ownerPid !== undefined && !isRunning(this.ownerPid));
  }

  /** The safety cap (`maxLifeMs`) has passed. */
  expired(): boolean {
    return this.now() >= this.maxLifeMs;
  }

  /** Blocks for `ms`; returns early with false when the parent died meanwhile. */
  sleep(ms: number): boolean {
    const until = Date.now() + ms;
    for (let left = ms; left > 0; left = until - Date.now()) {
      blockFor(Math.min(left, SLEEP_SLICE_MS));
      if (this.parentGone()) return false;
    }
    return true;
  }

  /**
   * For programs driven by the event loop (fa, fuseraft): checks both lifelines every `intervalMs` and calls
   * `gone` once with the reason. The timer is unref'd, so it never keeps a finished program alive. Returns a stop.
   */
  watch(gone: (reason: string) => void, intervalMs = 100): () => void {
    const timer = setInterval(() => {
      const reason = this.parentGone() ? 'parent process died' : this.expired() ? 'fake safety cap (maxLifeMs) reached' : undefined;
      if (reason === undefined) return;
      clearInterval(timer);
      gone(reason);
    }, intervalMs);
    timer.unref();
    return () => clearInterval(timer);
  }
}
