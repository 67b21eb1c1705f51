// replayRun's player: the script's events into an in-memory child, the recorded caller's controls sent again (or awaited from the caller), every wait bounded.
import type { Ack, Run } from '../../run/handle.js';
import type { InMemoryChild, PlayableEvent, ReceivedControl } from '../in-memory.js';
import { delayOf } from './replay-script.js';
import type { ReplayControl, ReplayScript, ReplayTiming } from './replay-script.js';

/** Who sends the recorded caller's controls: the replay itself (default), or the caller (the replay waits for them). */
export type ReplayControls = 'replayed' | 'caller';

export interface PlayerOptions {
  timing: ReplayTiming;
  controls: ReplayControls;
  /** How long the replay waits for a control before it ends the run `failed`, naming the control. */
  controlWaitMs: number;
}

/**
 * Plays the script into the in-memory child of `run`. An event that answers a control (its ack) waits for that
 * control: a control of the recorded caller is sent again through `run` (`controls: 'replayed'`) or awaited from
 * the caller; the task prompt and subvisor's own controls come from the run itself. A control that does not come
 * within `controlWaitMs` ends the run: the child exits `failed` saying which control it waited for, so a replay
 * always ends. The run's outcome settles the rest (a killed child is `gone` once disconnected).
 */
export async function playInMemory(script: ReplayScript, child: InMemoryChild, run: Run, options: PlayerOptions): Promise<void> {
  const live: number[] = [];
  let wake: (() => void) | undefined;
  let ended = false;
  void run.outcome.then(() => {
    ended = true;
    wake?.();
  });
  child.onControl = (received: ReceivedControl) => {
    const index = live.length;
    const expected = script.controls[index];
    if (expected?.type === received.control.type) {
      live.push(received.ref);
      wake?.();
    } else {
      const reason = expected === undefined ? `replay: the recording saw ${index} controls, not more` : `replay: the recording's control ${index + 1} was ${expected.type}, not ${received.control.type}`;
      child.ack(received.ref, 'rejected', reason);
    }
  };
  const stopped = (): boolean => ended || child.disconnected;
  /** Resolves on the next control, the run's end, or after `ms` (false then). */
  const nextControl = (ms: number): Promise<boolean> =>
    new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), ms);
      wake = () => {
        clearTimeout(timer);
        wake = undefined;
        resolve(true);
      };
    });
  // The first event waits a microtask: listeners attached right after replayRun returns see it.
  await Promise.resolve();
  if (script.sessionId !== undefined) child.session(script.sessionId);
  let previousAt = 0;
  let sent = 0;
  for (const step of script.steps) {
    while (step.after !== undefined && live.length <= step.after) {
      if (stopped()) return;
      const awaited = live.length;
      const control = script.controls[awaited]!;
      if (options.controls === 'replayed' && control.origin === 'caller' && sent <= awaited) {
        sent = awaited + 1;
        const delay = delayOf(options.timing, { at: control.at, event: { type: control.type } }, previousAt, script.controls);
        if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
        if (stopped()) return;
        sendAgain(run, control);
        continue;
      }
      if (!(await nextControl(options.controlWaitMs)) && live.length === awaited && !stopped()) {
        const from = control.origin === 'caller' ? 'the caller' : control.origin === 'task' ? 'the run (its task)' : 'the run itself';
        child.exit('failed', `replay: waited ${options.controlWaitMs} ms for the recording's control ${awaited + 1} (${control.type}, sent by ${from}), which never came`);
        child.gone();
        return;
      }
    }
    const delay = delayOf(options.timing, step, previousAt, script.controls);
    if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
    if (stopped()) return;
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

/** The recorded caller's control, sent again through the run's own surface (its ack is the replay's to give). */
function sendAgain(run: Run, control: ReplayControl): void {
  const text = control.text ?? `(the recorded ${control.type})`;
  const sent: Promise<Ack> =
    control.type === 'prompt' ? run.prompt(text)
    : control.type === 'steer' ? run.steer(text)
    : control.type === 'follow-up' ? run.followUp(text)
    : control.type === 'finalize' ? run.finalize(...(control.note === undefined ? [] : [control.note]))
    : control.type === 'cancel' ? run.cancel()
    : run.close();
  // The ack is the replay's own to play; a run that ended meanwhile refuses the control, and the replay stops on its end.
  sent.catch(() => undefined);
}
