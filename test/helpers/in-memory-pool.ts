// Test helpers of the pool over the in-memory driver: a `start` whose children a test scripts by task, and a manual clock for the pool's own timers.
import type { PoolClock, RateLimitFields, Run, RunOptions } from '../../src/index.js';
import { createInMemoryRun } from '../../src/testing/index.js';
import type { InMemoryChild } from '../../src/testing/index.js';
import { endRun } from './in-memory-play.js';

/** One child the start made: its options, its run, its played side. */
export interface MemoryChild {
  options: RunOptions;
  run: Run;
  child: InMemoryChild;
  /** The tasks it was sent as prompts, in order (a warm child's first prompt is its task). */
  prompts: string[];
  /** Holds its `ready` back until called (with `holdReady`). */
  ready: () => void;
  /** Ends a turn held by a `hold` task. */
  release: () => void;
}

/** What a child does with a task: answer it (`done: <task>`), report rate-limit news first, or hold the turn open. */
export type TaskScript = { answer?: string; rateLimit?: RateLimitFields; hold?: boolean; fail?: string };

export interface MemoryStartOptions {
  /** The script of a task (default: answer `done: <task>` in one turn). */
  script?: (task: string) => TaskScript;
  /** Children say ready only when the test calls `ready()` (default: at once). */
  holdReady?: boolean;
  /** A child started without a task (a warm child) dies before (or, `after-ready`, after) saying ready. */
  warmDies?: (index: number) => 'before-ready' | 'after-ready' | undefined;
}

/** A `start` for createSupervisor playing each child in-process; `children` lists every child in start order, `live()` those not ended. */
export function memoryStart(behaviour: MemoryStartOptions = {}) {
  const children: MemoryChild[] = [];
  let warmIndex = 0;
  let peak = 0;
  const live = () => children.filter((started) => !started.run.ended).length;
  const start = (options: RunOptions): Run => {
    const { command: _command, args: _args, protocol: _protocol, ...rest } = options;
    const { run, child } = createInMemoryRun(rest);
    let release = () => {};
    // A child reads no control before it is ready (as Fen's): what comes earlier waits for its ready.
    let isReady = false;
    const early: Array<Parameters<NonNullable<InMemoryChild['onControl']>>[0]> = [];
    const ready = () => {
      isReady = true;
      child.ready();
      for (const received of early.splice(0)) act(received);
    };
    const entry: MemoryChild = { options, run, child, prompts: [], ready, release: () => release() };
    children.push(entry);
    peak = Math.max(peak, live());
    let answer = '';
    const finish = (text: string) => {
      answer = text;
      child.text(text);
      child.turnComplete();
    };
    const act = ({ ref, control }: (typeof early)[number]) => {
      if (control.type === 'prompt') {
        entry.prompts.push(control.text);
        child.ack(ref, 'accepted');
        const script = behaviour.script?.(control.text) ?? {};
        if (script.fail !== undefined) {
          child.exit('failed', script.fail);
          child.gone();
          return;
        }
        child.turnStarted();
        if (script.rateLimit !== undefined) child.rateLimit(script.rateLimit);
        const text = script.answer ?? `done: ${control.text}`;
        if (script.hold === true) release = () => finish(text);
        else finish(text);
      } else if (control.type === 'close') {
        endRun(child, ref, 'done', answer === '' ? undefined : answer);
      } else if (control.type === 'cancel') {
        endRun(child, ref, 'cancelled');
      }
    };
    child.onControl = (received) => (isReady ? act(received) : early.push(received));
    const dies = options.task === undefined ? behaviour.warmDies?.(warmIndex++) : undefined;
    if (dies === 'before-ready') {
      queueMicrotask(() => {
        child.exit('failed', 'the warm child crashed while starting');
        child.gone();
      });
    } else if (dies === 'after-ready') {
      queueMicrotask(() => {
        ready();
        child.exit('failed', 'the warm child crashed while waiting');
        child.gone();
      });
    } else if (behaviour.holdReady !== true) {
      queueMicrotask(ready);
    }
    return run;
  };
  return { start, children, live, peak: () => peak, tasks: () => children.filter((started) => started.options.task !== undefined).map((started) => started.options.task!) };
}

/** A timer of the manual clock. */
interface ManualTimer {
  at: number;
  order: number;
  callback: () => void;
  held: boolean;
}

/** A clock the test moves (`advance`); it knows its pending timers and which of them would keep the process alive. */
export function manualClock(start = 1_700_000_000_000) {
  let now = start;
  let order = 0;
  const timers = new Set<ManualTimer>();
  const clock: PoolClock = {
    now: () => now,
    setTimer(callback, ms) {
      const timer: ManualTimer = { at: now + Math.max(0, ms), order: order++, callback, held: false };
      timers.add(timer);
      return {
        cancel: () => void timers.delete(timer),
        hold: (keepAlive) => void (timer.held = keepAlive),
      };
    },
  };
  return {
    clock,
    now: () => now,
    /** Moves the time on by `ms`, firing every timer due on the way, in order (one a timer sets too). */
    advance(ms: number): void {
      const until = now + ms;
      for (;;) {
        const due = [...timers].filter((timer) => timer.at <= until).sort((a, b) => a.at - b.at || a.order - b.order)[0];
        if (due === undefined) break;
        timers.delete(due);
        now = Math.max(now, due.at);
        due.callback();
      }
      now = until;
    },
    /** Timers not fired nor cancelled. */
    get pending(): number {
      return timers.size;
    },
    /** Of those, the ones that would keep the process alive. */
    get held(): number {
      return [...timers].filter((timer) => timer.held).length;
    },
  };
}

/** Lets queued microtasks and immediate callbacks run (in-memory runs settle across a few turns of the loop). */
export async function settle(turns = 10): Promise<void> {
  for (let turn = 0; turn < turns; turn++) await new Promise((resolve) => setImmediate(resolve));
}
