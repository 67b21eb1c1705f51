// Warm children: per start profile, children started with no task and waiting in ready for one; replaced when they die waiting (with a back-off when replacements keep dying), closed when idle too long.
import { isWarmable, warmStartOptions } from '../api/hand-off.js';
import type { RateLimitFields, Run, RunHandleState, RunOptions } from '../api/types.js';
import type { PoolClock, PoolTimer } from './clock.js';
import type { StartProfile } from './start-profile.js';
import type { ShutdownMode } from './types.js';

/** `warm` after its checks (see {@link SupervisorOptions.warm}). */
export interface WarmOptions {
  /** Children kept started and waiting, per start profile. */
  size: number;
  /** A child waiting this long without a task is closed (and not replaced until a run of its profile is spawned). */
  idleMs: number;
}

/** Default of {@link WarmOptions.idleMs}. */
export const WARM_IDLE_MS = 60_000;
/** Replacing children that keep dying waits 1 s, then 2 s, 4 s... at most a minute: the first replacement goes at once. */
const BACKOFF = { firstMs: 1000, maxMs: 60_000 } as const;

/**
 * Where a warm child is: `starting` (not ready yet), `ready` (waiting), `bound` (a spawned run waits for it to
 * be ready, or for the rate-limit gate), `handed` (it runs that run's task: no longer a warm child), `closing`
 * (closed by the pool: idle, evicted for a run waiting for a slot, shutdown).
 */
export type WarmChildState = 'starting' | 'ready' | 'bound' | 'handed' | 'closing';

export interface WarmChild {
  readonly run: Run;
  readonly profile: StartProfile;
  /** The rate-limit gate its news goes to before it is handed a task (its profile's runs'). */
  readonly gate: string;
  state: WarmChildState;
  /** When it became ready and free (the longest idle is evicted first). */
  readyAt: number;
}

/** What the warm children need of their pool. */
export interface WarmHost {
  /** The pool is shut down: no child starts any more. */
  readonly closed: boolean;
  /** Runs `job` once a slot is free and no run waits for one; the slot is held until the job's promise settles. */
  enqueue(job: () => Promise<void>): void;
  /** Starts a child (the pool's `start`); throws on options it refuses. */
  start(options: RunOptions): Run;
  /** A bound child became ready: its run's task may be handed over. */
  ready(child: WarmChild): void;
  /** A bound child ended before its run's task was handed over: the run starts as any other. */
  lost(child: WarmChild): void;
  /** Rate-limit news from a child not yet handed a task. */
  rateLimit(child: WarmChild, report: RateLimitFields): void;
  /** The number of live children changed. */
  changed(): void;
  /** A run waits for a slot: a child that becomes free now is closed for it rather than kept waiting. */
  slotWanted(): boolean;
}

/** One profile's children, its queued starts and its failures. */
interface Warmth {
  readonly profile: StartProfile;
  gate: string;
  readonly children: Set<WarmChild>;
  /** Starts queued for a slot. */
  queued: number;
  /** Children that died waiting since one was last handed a task or closed idle. */
  failures: number;
  backoff: PoolTimer | undefined;
  /** Its children cannot start (the start threw, or gives runs that cannot take a task later): its runs start cold. */
  refused: boolean;
}

/** The pool's warm children, every profile's. */
export class WarmPool {
  readonly #options: WarmOptions;
  readonly #clock: PoolClock;
  readonly #host: WarmHost;
  readonly #profiles = new Map<string, Warmth>();
  readonly #idleTimers = new Map<WarmChild, PoolTimer>();
  readonly #detach = new Map<WarmChild, () => void>();
  /** Children started and not gone that were never handed a task. */
  #live = 0;
  #goneWaiters: Array<() => void> = [];

  constructor(options: WarmOptions, clock: PoolClock, host: WarmHost) {
    this.#options = options;
    this.#clock = clock;
    this.#host = host;
  }

  /** Children started and not gone that run no task (starting, waiting, bound, closing): each holds a slot. */
  get live(): number {
    return this.#live;
  }

  /**
   * A run of `profile` was asked for: it gets `size` children, started as slots free up behind the queued runs;
   * their rate-limit news goes to `gate` (the run's).
   */
  fill(profile: StartProfile, gate: string): void {
    let warmth = this.#profiles.get(profile.key);
    if (warmth === undefined) {
      warmth = { profile, gate, children: new Set(), queued: 0, failures: 0, backoff: undefined, refused: false };
      this.#profiles.set(profile.key, warmth);
    }
    warmth.gate = gate;
    this.#topUp(warmth);
  }

  /** A free child of the profile for a run to take, ready ones first, then starting ones; undefined when there is none. */
  take(profileKey: string): WarmChild | undefined {
    const children = [...(this.#profiles.get(profileKey)?.children ?? [])];
    const child = children.find((candidate) => candidate.state === 'ready') ?? children.find((candidate) => candidate.state === 'starting');
    if (child === undefined) return undefined;
    child.state = 'bound';
    this.#stopIdle(child);
    return child;
  }

  /** Its run no longer wants it (it ended before the hand-off): free again. */
  unbind(child: WarmChild): void {
    if (child.state !== 'bound') return;
    if (child.run.state !== 'ready') child.state = 'starting';
    else this.#free(child);
  }

  /** Its run's task was handed to it: it is that run now, and another child is started for the profile. */
  handedOff(child: WarmChild): void {
    child.state = 'handed';
    this.#detach.get(child)?.();
    this.#live--;
    const warmth = this.#profiles.get(child.profile.key);
    if (warmth !== undefined) {
      warmth.failures = 0;
      this.#topUp(warmth);
    }
    this.#host.changed();
  }

  /** A run waits for a slot a waiting child holds: the child idle longest is closed. False when none waits. */
  evictIdle(): boolean {
    let idlest: WarmChild | undefined;
    for (const warmth of this.#profiles.values()) {
      for (const child of warmth.children) if (child.state === 'ready' && (idlest === undefined || child.readyAt < idlest.readyAt)) idlest = child;
    }
    if (idlest === undefined) return false;
    this.#close(idlest, 'close');
    return true;
  }

  /** Shutdown: no child starts again; every child not running a task goes as `mode` says (`finalize` closes a waiting one). */
  stop(mode: ShutdownMode): void {
    for (const warmth of this.#profiles.values()) {
      warmth.backoff?.cancel();
      warmth.backoff = undefined;
      for (const child of warmth.children) {
        if (child.state === 'handed') continue;
        this.#close(child, mode === 'kill' ? 'kill' : mode === 'cancel' || child.state !== 'ready' ? 'terminate' : 'close');
      }
    }
  }

  /** Resolves once no child is left that runs no task (at once when none is). */
  whenGone(): Promise<void> {
    if (this.#live === 0) return Promise.resolve();
    return new Promise((resolve) => this.#goneWaiters.push(resolve));
  }

  /* ---------------------------------------------------------------------------------------------- */

  #topUp(warmth: Warmth): void {
    if (this.#host.closed || warmth.refused || warmth.backoff !== undefined) return;
    let free = 0;
    for (const child of warmth.children) if (child.state === 'starting' || child.state === 'ready') free++;
    for (let have = free + warmth.queued; have < this.#options.size; have++) {
      warmth.queued++;
      this.#host.enqueue(() => this.#start(warmth));
    }
  }

  /** A slot came: starts one child; the slot is held until the child is gone (after its task, once handed one). */
  #start(warmth: Warmth): Promise<void> {
    warmth.queued--;
    if (this.#host.closed || warmth.refused) return Promise.resolve();
    let run: Run;
    try {
      run = this.#host.start(warmStartOptions(warmth.profile.options));
    } catch (error) {
      this.#refuse(warmth, `its start refused the options: ${(error as Error).message}`);
      return Promise.resolve();
    }
    if (!isWarmable(run)) {
      this.#refuse(warmth, "the pool's start gives runs that cannot take a task later (not spawnRun's or createInMemoryRun's)");
      void run.terminate('not warmable');
      return run.outcome.then(() => undefined);
    }
    const child: WarmChild = { run, profile: warmth.profile, gate: warmth.gate, state: 'starting', readyAt: 0 };
    warmth.children.add(child);
    this.#live++;
    const onState = (state: RunHandleState) => {
      if (state !== 'ready') return;
      if (child.state === 'starting') this.#free(child);
      else if (child.state === 'bound') this.#host.ready(child);
    };
    const onRateLimit = (report: RateLimitFields) => this.#host.rateLimit(child, report);
    run.on('state', onState);
    run.on('rate-limit', onRateLimit);
    this.#detach.set(child, () => {
      run.off('state', onState);
      run.off('rate-limit', onRateLimit);
      this.#detach.delete(child);
    });
    this.#host.changed();
    return run.outcome.then(() => this.#gone(warmth, child));
  }

  /** Ready and free: it waits for a task, unless a run waits for the slot it holds (then it is closed for it). */
  #free(child: WarmChild): void {
    child.state = 'ready';
    if (this.#host.slotWanted()) this.#close(child, 'close');
    else this.#waiting(child);
  }

  /** Waiting: closed if no run takes it within `idleMs`. */
  #waiting(child: WarmChild): void {
    child.state = 'ready';
    child.readyAt = this.#clock.now();
    this.#stopIdle(child);
    this.#idleTimers.set(
      child,
      this.#clock.setTimer(() => {
        this.#idleTimers.delete(child);
        if (child.state !== 'ready') return;
        const warmth = this.#profiles.get(child.profile.key);
        if (warmth !== undefined) warmth.failures = 0;
        this.#close(child, 'close');
      }, this.#options.idleMs),
    );
  }

  #stopIdle(child: WarmChild): void {
    this.#idleTimers.get(child)?.cancel();
    this.#idleTimers.delete(child);
  }

  #close(child: WarmChild, how: 'close' | 'terminate' | 'kill'): void {
    const waited = child.state === 'ready';
    child.state = 'closing';
    this.#stopIdle(child);
    if (how === 'kill') void child.run.kill('the pool no longer needs this warm child');
    else if (how === 'terminate' || !waited) void child.run.terminate('the pool no longer needs this warm child');
    // A waiting child leaves as any run does when closed (its answer-less end is not a task's).
    else child.run.close().catch(() => void child.run.terminate('the pool no longer needs this warm child'));
  }

  #gone(warmth: Warmth, child: WarmChild): void {
    warmth.children.delete(child);
    this.#stopIdle(child);
    this.#detach.get(child)?.();
    if (child.state === 'handed') return;
    this.#live--;
    if (child.state !== 'closing') {
      // It died waiting: its run (if one was bound to it) starts without it, and a replacement follows.
      warmth.failures++;
      if (child.state === 'bound') this.#host.lost(child);
      this.#replace(warmth);
    }
    // A profile nobody asks for any more (its children closed idle) is forgotten; one refused stays refused.
    if (warmth.children.size === 0 && warmth.queued === 0 && warmth.backoff === undefined && !warmth.refused) this.#profiles.delete(warmth.profile.key);
    this.#host.changed();
    if (this.#live === 0) for (const resolve of this.#goneWaiters.splice(0)) resolve();
  }

  /** The first replacement goes at once; while replacements keep dying each waits twice as long (1 s, 2 s... 60 s). */
  #replace(warmth: Warmth): void {
    if (this.#host.closed || warmth.backoff !== undefined) return;
    const delay = warmth.failures <= 1 ? 0 : Math.min(BACKOFF.firstMs * 2 ** (warmth.failures - 2), BACKOFF.maxMs);
    if (delay === 0) return this.#topUp(warmth);
    warmth.backoff = this.#clock.setTimer(() => {
      warmth.backoff = undefined;
      this.#topUp(warmth);
    }, delay);
  }

  #refuse(warmth: Warmth, reason: string): void {
    if (warmth.refused) return;
    warmth.refused = true;
    process.emitWarning(`subvisor: no warm children for a start profile: ${reason}; its runs start cold`, { code: 'SUBVISOR_WARM' });
  }
}

/** `options.warm` checked: a count, or `{ size, idleMs }`; undefined when there are none. */
export function checkWarmOptions(value: unknown): WarmOptions | undefined {
  if (value === undefined || value === 0) return undefined;
  if (typeof value !== 'number' && (typeof value !== 'object' || value === null)) throw new TypeError('options.warm must be a number of children or { size, idleMs }');
  const { size, idleMs = WARM_IDLE_MS, ...rest } = (typeof value === 'number' ? { size: value } : value) as { size?: unknown; idleMs?: unknown };
  const unknown = Object.keys(rest)[0];
  if (unknown !== undefined) throw new TypeError(`options.warm.${unknown} is not a warm option (size, idleMs)`);
  if (typeof size !== 'number' || !Number.isInteger(size) || size < 0) throw new RangeError('options.warm must be an integer >= 0 (children per start profile)');
  if (typeof idleMs !== 'number' || !Number.isFinite(idleMs) || idleMs < 0) throw new RangeError('options.warm.idleMs must be a finite number of milliseconds >= 0');
  return size === 0 ? undefined : { size, idleMs };
}
