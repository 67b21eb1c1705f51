// Replaying a journal: as a Fen fake child process (replayChild), or in memory with every event's own shape (replayRun).
import { readJournal } from '../../journal/read-journal.js';
import type { Journal } from '../../journal/read-journal.js';
import { fakeChild } from '../fen-kit.js';
import type { FakeChild } from '../fen-kit.js';
import { createInMemoryRun, IN_MEMORY_RUN_OPTION_KEYS } from '../in-memory.js';
import type { InMemoryChild, InMemoryRun, InMemoryRunOptions, PlayableEvent, ReceivedControl } from '../in-memory.js';
import { delayOf, replayScriptOf } from './replay-script.js';
import type { ReplayScript, ReplayTiming } from './replay-script.js';
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

/** replayRun's options: a replay's, and createInMemoryRun's. */
export type ReplayRunOptions = ReplayOptions & InMemoryRunOptions;

/**
 * A recorded run replayed in memory, no process: the same events with the same shapes whatever the
 * protocol (each with the fact it means for the run: acks, turns, deliveries, result, exit), acks sent
 * once their control arrived. `options` are createInMemoryRun's; the recorded task is the default task.
 */
export function replayRun(journal: string | Journal | ReplayScript, options: ReplayRunOptions = {}): InMemoryRun {
  refuseUnknownKeys(options, [...REPLAY_OPTION_KEYS, ...IN_MEMORY_RUN_OPTION_KEYS], 'replayRun');
  const script = scriptOf(journal);
  const { timing = 'compressed', outlivesParent: _outlives, maxLifeMs: _cap, ...runOptions } = options;
  const started = createInMemoryRun({ ...(script.task === undefined ? {} : { task: script.task }), ...runOptions } satisfies InMemoryRunOptions);
  void playInMemory(script, started.child, timing);
  return started;
}

/** Plays the script into the in-memory child; the run's outcome settles the rest (a killed child is `gone` once disconnected). */
async function playInMemory(script: ReplayScript, child: InMemoryChild, timing: ReplayTiming): Promise<void> {
  const live: number[] = [];
  let waiting: (() => void) | undefined;
  child.onControl = (received: ReceivedControl) => {
    const index = live.length;
    const expected = script.controls[index];
    if (expected?.type === received.control.type) {
      live.push(received.ref);
      waiting?.();
    } else {
      const reason = expected === undefined ? `replay: the recording saw ${index} controls, not more` : `replay: the recording's control ${index + 1} was ${expected.type}, not ${received.control.type}`;
      child.ack(received.ref, 'rejected', reason);
    }
  };
  // The first event waits a microtask: listeners attached right after replayRun returns see it.
  await Promise.resolve();
  if (script.sessionId !== undefined) child.session(script.sessionId);
  let previousAt = 0;
  for (const step of script.steps) {
    while (step.after !== undefined && live.length <= step.after) {
      if (child.disconnected) return;
      await new Promise<void>((resolve) => (waiting = resolve));
    }
    const delay = delayOf(timing, step, previousAt, script.controls);
    if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
    if (child.disconnected) return;
    const event = { ...step.event };
    if (typeof event['ref'] === 'number') event['ref'] = live[event['ref']];
    if (Array.isArray(event['refs'])) event['refs'] = (event['refs'] as number[]).map((index) => live[index]);
    if (event.type === 'rejected') {
      const { type: _type, ...rejection } = event;
      child.rejected(rejection as Parameters<InMemoryChild['rejected']>[0]);
    } else if (event.type === 'result' && script.finalText !== undefined) {
      child.play(event as PlayableEvent, { finalText: script.finalText, truncated: false });
    } else {
      child.play(event as PlayableEvent);
    }
    previousAt = step.at;
  }
  if (script.end.exitLine || !script.end.killed) child.gone();
}
