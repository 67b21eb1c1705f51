// Harness of the spawnRun matrix: one supervised fake-child run per test, recorded, checked and torn down.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { spawnRun } from '../../src/index.js';
import type { Ack, Outcome, Run, RunEvent, RunHandleState as RunState, RunOptions } from '../../src/index.js';
import { fakeChild, waitUntilGone } from '../../src/testing/index.js';
import type { BuiltinScenarioName, FakeChild, FakeChildOptions, Scenario, TurnScript, TurnStep } from '../../src/testing/index.js';
import type { WireControlType } from '../../src/wire/index.js';

/** Fast fake-child cadence: the suite stays quick without changing what is tested. */
export const FAST_CHILD: FakeChildOptions = { turnTickMs: 5, idleTickMs: 20 };

/** Short graces for the kill ladder and ready wait; bounds on waits stay generous. */
export const FAST_RUN: Partial<RunOptions> = { killGraceMs: 200, readyTimeoutMs: 20_000 };

/**
 * A child that prints the deadline subvisor handed it (`FEN_WIRE_DEADLINE`, or `none`) and exits without a word of
 * the protocol: its run fails at once, and `outcome.outputTail` is the deadline it saw.
 */
export const PRINT_DEADLINE = { command: process.execPath, args: ['-e', "process.stdout.write(process.env.FEN_WIRE_DEADLINE ?? 'none')"] };

/** The deadline a {@link PRINT_DEADLINE} child saw, in seconds from now (undefined: it saw none). */
export function secondsLeft(outputTail: string): number | undefined {
  return outputTail === 'none' ? undefined : Number(outputTail) - Date.now() / 1000;
}

/** Generous bound for anything a test waits for (shared, noisy 2-core machine). */
export const BOUND_MS = 30_000;

/** Cap of a pause that waits for controls: reached only when a test goes wrong. */
const HOLD_MS = 20_000;

/**
 * A pause that holds a turn until the child has read the controls a test sends mid-turn: a control of that
 * type, or that many control lines since `turn-started`. No fixed pause long enough for a loaded machine.
 */
export function holdUntil(until: WireControlType | number): TurnStep {
  return typeof until === 'number' ? { pause: HOLD_MS, untilControls: until } : { pause: HOLD_MS, untilControl: until };
}

/** Turn 1 holds until `until` (see {@link holdUntil}); later turns answer `next:<input>` at once. */
export function firstTurnUntil(until: WireControlType | number, finalTurn: TurnScript = { answer: { echo: true, prefix: 'final:' } }): Scenario {
  return {
    name: `first-turn-until-${until}`,
    turns: [{ steps: [holdUntil(until)], answer: { echo: true, prefix: 'first:' } }, { answer: { echo: true, prefix: 'next:' } }],
    finalTurn,
  };
}

/** A fresh private stateDir per run, so "nothing left behind" can be asserted exactly. */
export function freshStateDir(): string {
  return mkdtempSync(join(tmpdir(), 'subvisor-spawn-test-'));
}

export interface StartOptions extends Partial<RunOptions> {
  child?: FakeChildOptions;
}

/** A supervised run with everything a test needs to check it afterwards. */
export interface Supervised {
  run: Run;
  child: FakeChild;
  stateDir: string;
  /** False when the caller passed its own (shared) stateDir. */
  ownsStateDir: boolean;
  /** Every event, as the `event` listener saw it from the start. */
  events: RunEvent[];
  /** The mirrored states: the initial one, then every `state` event. */
  states: RunState[];
  /** Every ack promise a test made through {@link Supervised.control}. */
  acks: Promise<Ack>[];
  /** The mirrored state right after each control-ack was applied, by the acked control's seq. */
  stateAtAck: Map<number, RunState>;
  /** Pids seen in the tree while the run was alive (the child and whatever the child reported). */
  pids: Set<number>;
  /** Sends a control and records its ack promise (so finish() can check every ack settles). */
  control(send: (run: Run) => Promise<Ack>): Promise<Ack>;
  /** Resolves with the first event (already seen or to come) matching `match`; rejects if the run ends first or at the bound. */
  waitEvent<E extends RunEvent = RunEvent>(match: (event: RunEvent) => boolean, what?: string, boundMs?: number): Promise<E>;
  /** Resolves once `run.state` is `state` (now or later). */
  waitState(state: RunState, boundMs?: number): Promise<void>;
  /** Awaits the outcome within the bound, checks the stream invariants, the tree and the stateDir. */
  finish(checks?: FinishChecks): Promise<Outcome>;
}

export interface FinishChecks {
  /** Expected outcome status (also checked against the final exit event unless `exitStatusDiffers`). */
  status?: Outcome['status'];
  /** The final exit event may say something other than the outcome (e.g. the parent enforced it). */
  exitStatusDiffers?: boolean;
  /** Also compare the mirror with the child's transcript (needs the transcript, so done before cleanup). */
  mirror?: boolean;
  boundMs?: number;
}

const open = new Set<Supervised>();

/** Starts a fake child under spawnRun with a fresh stateDir, fast cadence and short graces. */
export function supervise(scenario: Scenario | BuiltinScenarioName, options: StartOptions = {}): Supervised {
  const { child: childOptions, ...runOptions } = options;
  const child = fakeChild(scenario, { ...FAST_CHILD, ...childOptions });
  const ownsStateDir = runOptions.stateDir === undefined;
  const stateDir = runOptions.stateDir ?? freshStateDir();
  let run: Run;
  try {
    run = spawnRun({
      ...FAST_RUN,
      ...runOptions,
      command: child.command,
      args: child.args,
      env: { ...child.env, ...runOptions.env },
      stateDir,
    });
  } catch (error) {
    child.cleanup();
    if (ownsStateDir) rmSync(stateDir, { recursive: true, force: true });
    throw error;
  }
  const events: RunEvent[] = [];
  const states: RunState[] = [run.state];
  const acks: Promise<Ack>[] = [];
  const pids = new Set<number>();
  if (run.pid !== undefined) pids.add(run.pid);
  const stateAtAck = new Map<number, RunState>();
  run.on('event', (event) => {
    events.push(event);
    // The mirror has applied an event by the time it is published; the ack promise settles a little later,
    // after the rest of the batch, so this is the only exact view of the state "right after the ack".
    if (event.type === 'control-ack' && event.ref !== undefined) stateAtAck.set(event.ref, run.state);
    const reported = grandchildPidOf(event);
    if (reported !== undefined) pids.add(reported);
  });
  run.on('state', (state) => states.push(state));

  const supervised: Supervised = {
    run,
    child,
    stateDir,
    ownsStateDir,
    events,
    states,
    acks,
    pids,
    stateAtAck,
    control(send) {
      const ack = send(run);
      acks.push(ack);
      return ack;
    },
    waitEvent<E extends RunEvent = RunEvent>(match: (event: RunEvent) => boolean, what = 'event', boundMs = BOUND_MS) {
      return new Promise<E>((resolve, reject) => {
        const seen = events.find(match);
        if (seen) {
          resolve(seen as E);
          return;
        }
        const cleanup = (): void => {
          clearTimeout(timer);
          run.off('event', onEvent);
        };
        const onEvent = (event: RunEvent): void => {
          if (match(event)) {
            cleanup();
            resolve(event as E);
          } else if (event.type === 'exit') {
            cleanup();
            reject(new Error(`run ended before ${what}; events: ${summarise(events)}`));
          }
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`no ${what} within ${boundMs} ms; events: ${summarise(events)}`));
        }, boundMs);
        run.on('event', onEvent);
      });
    },
    waitState(state, boundMs = BOUND_MS) {
      return new Promise<void>((resolve, reject) => {
        if (run.state === state) {
          resolve();
          return;
        }
        const cleanup = (): void => {
          clearTimeout(timer);
          run.off('state', onState);
          run.off('outcome', onOutcome);
        };
        const onState = (next: RunState): void => {
          if (next === state) {
            cleanup();
            resolve();
          }
        };
        const onOutcome = (): void => {
          if (run.state === state) return;
          cleanup();
          reject(new Error(`run ended in ${run.state} before reaching ${state}; states: ${states.join(' > ')}`));
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`state ${state} not reached within ${boundMs} ms; states: ${states.join(' > ')}`));
        }, boundMs);
        run.on('state', onState);
        run.on('outcome', onOutcome);
      });
    },
    async finish(checks = {}) {
      const outcome = await within(run.outcome, checks.boundMs ?? BOUND_MS, 'outcome').catch((error: unknown) => {
        throw new Error(`${String(error)}; state ${run.state}; events: ${summarise(events)}`);
      });
      try {
        if (checks.status !== undefined) expect(outcome.status, describeOutcome(outcome)).toBe(checks.status);
        checkStream(events, outcome, checks);
        if (checks.mirror) expectMirrorMatchesChild(supervised);
        // Every ack settles (unanswered at the latest), and so does every delivery.
        const settled = await within(Promise.allSettled(acks), 5_000, 'every ack');
        for (const result of settled) {
          expect(result.status === 'fulfilled' || isRefusal(result.reason), String((result as PromiseRejectedResult).reason)).toBe(true);
          if (result.status === 'fulfilled' && result.value.delivery) await within(result.value.delivery, 5_000, 'a delivery');
        }
        await expectTreeGone(supervised);
        // A shared stateDir is checked by its owner once every run sharing it ended.
        if (ownsStateDir) expectEmptyStateDir(stateDir);
      } finally {
        dispose(supervised);
      }
      return outcome;
    },
  };
  open.add(supervised);
  return supervised;
}

function isRefusal(reason: unknown): boolean {
  return reason instanceof Error && reason.name === 'ControlRefusedError';
}

/** Checks the per-run stream invariants: one exit, last; result before it only when done; seqs increase; rejections counted. */
export function checkStream(events: RunEvent[], outcome: Outcome, checks: FinishChecks = {}): void {
  const exits = events.filter((event) => event.type === 'exit');
  expect(exits.length, `exactly one exit: ${summarise(events)}`).toBe(1);
  const last = events[events.length - 1];
  expect(last?.type, 'exit is last').toBe('exit');
  if (!checks.exitStatusDiffers && last?.type === 'exit') expect(last.status, 'exit status = outcome status').toBe(outcome.status);
  const results = events.filter((event) => event.type === 'result');
  expect(results.length, 'at most one result').toBeLessThanOrEqual(1);
  if (results.length === 1) {
    expect(outcome.status, 'a result only when done').toBe('done');
    expect(events.indexOf(results[0] as RunEvent)).toBeLessThan(events.length - 1);
  }
  let lastSeq = 0;
  for (const event of events) {
    if (event.type === 'rejected' || (event.type === 'exit' && event.synthetic)) continue;
    expect(typeof event.seq).toBe('number');
    // A driver's rate-limit news shares the seq of the line it came from (Fen's `error`), published right after it.
    if (event.type === 'rate-limit') expect(event.seq, `rate-limit news follows its line: ${summarise(events)}`).toBe(lastSeq);
    else expect(event.seq as number, `seqs strictly increase: ${summarise(events)}`).toBeGreaterThan(lastSeq);
    lastSeq = event.seq as number;
    expect(event.run).toBe(outcome.runId);
  }
  expect(outcome.rejectedLines, 'rejectedLines counts every rejected event').toBe(
    events.filter((event) => event.type === 'rejected').length,
  );
  expect(outcome.runId).toBeTypeOf('string');
  expect(outcome.durationMs).toBeGreaterThanOrEqual(0);
}

/** No process of the run's tree is alive: the child, what it reported, and anything carrying the kit token. */
export async function expectTreeGone(supervised: Supervised, boundMs = 5_000): Promise<void> {
  const survivors = await waitUntilGone(() => [...supervised.pids, ...supervised.child.livePids()], boundMs);
  expect(survivors, 'no process of the tree survives the outcome').toEqual([]);
}

export function expectEmptyStateDir(stateDir: string): void {
  expect(readdirSync(stateDir), `stateDir ${stateDir} is empty`).toEqual([]);
}

/**
 * Tears a run down whatever state it is in (used by finish() and by afterEach after a failure): any
 * survivor (already reported by a failed check) is SIGKILLed so one failure does not leak into the suite.
 */
function dispose(supervised: Supervised): void {
  open.delete(supervised);
  killSurvivors(supervised);
  supervised.child.cleanup();
  if (supervised.ownsStateDir) rmSync(supervised.stateDir, { recursive: true, force: true });
}

/**
 * afterEach hook: any run a failed test left behind is terminated, its processes SIGKILLed and its files
 * removed, so one failure does not cascade into the next tests.
 */
export async function reapLeftovers(): Promise<void> {
  for (const supervised of [...open]) {
    await within(supervised.run.terminate('test cleanup'), 10_000, 'terminate').catch(() => undefined);
    dispose(supervised);
  }
}

function killSurvivors(supervised: Supervised): void {
  for (const pid of [...supervised.pids, ...supervised.child.livePids()]) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

/** Resolves like `promise`, or rejects naming `what` after `boundMs`. */
export function within<T>(promise: Promise<T>, boundMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within ${boundMs} ms`)), boundMs);
  });
  return Promise.race([promise, bound]).finally(() => clearTimeout(timer));
}

export function summarise(events: RunEvent[]): string {
  return events
    .map((event) => {
      if (event.type === 'control-ack') return `ack(${event.ref}:${event.status})`;
      if (event.type === 'rejected') return `rejected(${event.code})`;
      if (event.type === 'exit') return `exit(${event.status}${event.synthetic ? ',synthetic' : ''})`;
      if (event.type === 'turn-complete') return `turn-complete(${event.stopReason})`;
      return event.type;
    })
    .join(' ');
}

export function describeOutcome(outcome: Outcome): string {
  const { outputTail, finalText, ...rest } = outcome;
  return JSON.stringify({ ...rest, finalTextLength: finalText?.length, outputTail: outputTail.slice(-400) });
}

/** The event types in order (without rejected lines), for order assertions. */
/** The pid a fake child's `spawn-grandchild` step reports (an unknown Fen field, so under `extra`). */
export function grandchildPidOf(event: RunEvent): number | undefined {
  const pid = event.type === 'rejected' ? undefined : event.extra?.['grandchildPid'];
  return typeof pid === 'number' ? pid : undefined;
}

export function types(events: RunEvent[]): string[] {
  return events.map((event) => event.type);
}

/** Collapses consecutive repeats (the child's transcript states are collapsed the same way). */
export function collapse<T>(list: readonly T[]): T[] {
  return list.filter((item, index) => index === 0 || list[index - 1] !== item);
}

/**
 * The mirror followed the child exactly: the same sequence of states, and every control the child
 * answered was answered the same way to the caller.
 */
export function expectMirrorMatchesChild(supervised: Supervised): void {
  const transcript = supervised.child.transcript();
  expect(collapse(supervised.states), `mirror states vs child states (events: ${summarise(supervised.events)})`).toEqual(
    transcript.states,
  );
}

/** The child's transcript entry for the control line with this seq. */
export function childControl(supervised: Supervised, seq: number) {
  return supervised.child.transcript().controls.find((entry) => entry.message?.seq === seq);
}

export interface CellExpectation {
  status: Ack['status'];
  /** The mirrored state right after the ack resolved. */
  state: RunState;
  /** A substring of the child's reason (rejections). */
  reason?: string;
}

/**
 * Waits (bounded) for the child's transcript entry of control `seq`: the child may append it to its
 * transcript a moment after writing the ack event.
 */
export async function waitChildControl(supervised: Supervised, seq: number, boundMs = 5_000) {
  const until = Date.now() + boundMs;
  for (;;) {
    const entry = childControl(supervised, seq);
    if (entry?.ack !== undefined || Date.now() > until) return entry;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** One cell of the state table: the caller's ack, the mirror right after it, and the child's own record. */
export async function expectCell(supervised: Supervised, ack: Ack, expected: CellExpectation): Promise<void> {
  expect(ack.status, `ack ${JSON.stringify(ack)}`).toBe(expected.status);
  if (expected.reason !== undefined) expect(ack.reason).toContain(expected.reason);
  expect(supervised.stateAtAck.get(ack.seq), 'mirror right after the ack').toBe(expected.state);
  const entry = await waitChildControl(supervised, ack.seq);
  expect(entry, `the child read control ${ack.seq}`).toBeDefined();
  expect(entry?.ack?.status, 'the child sent that status').toBe(expected.status);
  expect(entry?.state, "the child's own state after it").toBe(expected.state);
}
