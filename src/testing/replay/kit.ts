// Replaying a journal: as a Fen fake child process (replayChild), or in memory with every event's own shape (replayRun).
import { readJournal } from '../../journal/read-journal.js';
import type { Journal } from '../../journal/read-journal.js';
import { fakeChild } from '../fen-kit.js';
import type { FakeChild } from '../fen-kit.js';
import { createInMemoryRun, IN_MEMORY_RUN_OPTION_KEYS } from '../in-memory.js';
import type { InMemoryRun, InMemoryRunOptions } from '../in-memory.js';
import { replayScriptOf } from './replay-script.js';
import type { ReplayScript, ReplayTiming } from './replay-script.js';
import { playInMemory } from './in-memory-player.js';
import type { ReplayControls } from './in-memory-player.js';
import { MAX_TIMER_MS } from '../../run/run-timers.js';
import { refuseUnknownKeys } from '../../text/option-keys.js';

export interface ReplayOptions {
  /** How the events are spaced: `compressed` (default: as fast as the controls allow), `kept` (as recorded), or `{ speed }` (recorded gaps divided by it). */
  timing?: ReplayTiming;
  /** replayChild: the child keeps running when its parent dies (a durable run's). Default false. */
  outlivesParent?: boolean;
  /** replayChild: safety cap on the child's life. Default 600000. */
  maxLifeMs?: number;
}

/** A replay child ready to spawn: spread it into a run's options, the recorded task included. */
export type ReplayChild = Omit<FakeChild, 'transcript' | 'transcripts'> & {
  /** The recording's task (enumerable, so a spread starts the replay with it); absent when it had none. */
  task?: string;
  /** The script the child plays. */
  readonly script: ReplayScript;
};

function scriptOf(journal: string | Journal | ReplayScript): ReplayScript {
  if (typeof journal === 'string') return replayScriptOf(readJournal(journal));
  return 'entries' in journal ? replayScriptOf(journal) : journal;
}

const REPLAY_OPTION_KEYS = Object.keys({ timing: true, outlivesParent: true, maxLifeMs: true } satisfies Record<keyof ReplayOptions, true>);

/**
 * A Fen fake child that plays a recorded run (a journal's path, a journal, or its script): the recorded
 * events in order, each `control-ack` written once its control arrived (with the live control's seq),
 * the answer whole, and the end the recorded child had (its own `exit` line and code, or lingering until
 * the parent's kill ladder kills it again). Start it with the same task and send the same controls to
 * get the same run; a control the recording did not see is rejected, saying what it expected. A journal
 * of another protocol replays over Fen: the same event types in the same order, Fen's fields the same,
 * the other protocol's own fields under `extra` (`replayRun` keeps every shape).
 */
export function replayChild(journal: string | Journal | ReplayScript, options: ReplayOptions = {}): ReplayChild {
  refuseUnknownKeys(options, REPLAY_OPTION_KEYS, 'replayChild');
  const script = scriptOf(journal);
  const fake = fakeChild(
    {
      name: `replay of a ${script.protocol} run`,
      replay: script,
      replayTiming: options.timing ?? 'compressed',
      ...(options.outlivesParent === undefined ? {} : { outlivesParent: options.outlivesParent }),
      ...(options.maxLifeMs === undefined ? {} : { maxLifeMs: options.maxLifeMs }),
    },
    { transcript: false },
  );
  const child = fake as unknown as ReplayChild;
  Object.defineProperty(child, 'script', { value: script, enumerable: false });
  if (script.task !== undefined) child.task = script.task;
  return child;
}

/** replayRun's own options. */
export interface ReplayRunControls {
  /**
   * Who sends the controls the recorded caller sent (a steer, a follow-up, a cancel...): `replayed` (default) sends
   * each again, with its recorded text, when the replay reaches the event that answers it; `caller`: your test
   * sends them (`run.steer(...)`) and the replay waits for each. The task prompt and subvisor's own controls
   * always come from the run itself.
   */
  controls?: ReplayControls;
  /** How long the replay waits for a control before it ends the run `failed`, naming the control. Default 30000. */
  controlWaitMs?: number;
}

/** replayRun's options: a replay's, its own, and createInMemoryRun's. */
export type ReplayRunOptions = ReplayOptions & ReplayRunControls & InMemoryRunOptions;

/**
 * A recorded run replayed in memory, no process: the same events with the same shapes whatever the
 * protocol (each with the fact it means for the run: acks, turns, deliveries, result, exit), acks sent
 * once their control arrived. `options` are createInMemoryRun's; the recorded task is the default task.
 */
export function replayRun(journal: string | Journal | ReplayScript, options: ReplayRunOptions = {}): InMemoryRun {
  refuseUnknownKeys(options, [...REPLAY_OPTION_KEYS, 'controls', 'controlWaitMs', ...IN_MEMORY_RUN_OPTION_KEYS], 'replayRun');
  const { timing = 'compressed', outlivesParent: _outlives, maxLifeMs: _cap, controls = 'replayed', controlWaitMs = 30_000, ...runOptions } = options;
  if (controls !== 'replayed' && controls !== 'caller') throw new TypeError("options.controls must be 'replayed' or 'caller'");
  if (typeof controlWaitMs !== 'number' || !(controlWaitMs > 0) || controlWaitMs > MAX_TIMER_MS) {
    throw new RangeError(`options.controlWaitMs must be a number of milliseconds from 1 to ${MAX_TIMER_MS}`);
  }
  const script = scriptOf(journal);
  const started = createInMemoryRun({ ...(script.task === undefined ? {} : { task: script.task }), ...runOptions } satisfies InMemoryRunOptions);
  void playInMemory(script, started.child, started.run, { timing, controls, controlWaitMs });
  return started;
}
