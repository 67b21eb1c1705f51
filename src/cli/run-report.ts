// What supervise shows of a run, local or queued: each event (progress, output, control marks) and the closing summary.
import type { Outcome, RunEvent } from '../api/types.js';
import type { EventMarks } from './event-marks.js';
import type { OutputWriter, Stdout } from './output.js';
import { handleSignals } from './signals.js';
import { formatElapsed, type Progress } from './progress.js';
import { totalTokens } from '../wire/index.js';

/** The longest tail of the child's own output shown on stderr when a run did not end done. */
const OUTPUT_TAIL_SHOWN = 2000;

/**
 * The closing stderr lines: how the run ended (with --quiet only when it did not end done: then it is the
 * error), a truncation warning, the child's output when it failed.
 */
export function summarize(outcome: Outcome, progress: Progress): void {
  const tokens = totalTokens(outcome.usage);
  const details = [`${outcome.turns} turn${outcome.turns === 1 ? '' : 's'}`];
  if (tokens !== undefined) details.push(`${tokens} tokens`);
  if (outcome.usage?.costUsd !== undefined) details.push(`$${outcome.usage.costUsd.toFixed(4)}`);
  details.push(formatElapsed(outcome.durationMs));
  const error = outcome.error === undefined ? '' : `: ${outcome.error}`;
  const ended = `run ${outcome.status} (${details.join(', ')})${error}`;
  if (outcome.status === 'done') progress.inform(ended);
  else progress.say(ended);
  const exceeded = outcome.budget?.exceeded;
  // An answer given because the budget asked for it early is said even with --quiet: it may be partial.
  if (outcome.status === 'done' && exceeded !== undefined) {
    progress.say(`the ${exceeded.scope === 'shared' ? 'shared ' : ''}budget's ${exceeded.limit} was reached: the run was asked for its answer (${exceeded.action})`);
  }
  if (outcome.status === 'done' && outcome.truncated) {
    progress.say(`warning: the answer is truncated${outcome.truncationNote === undefined ? '' : `: ${outcome.truncationNote}`}`);
  } else if (outcome.status === 'done' && outcome.finalText === undefined) {
    progress.say('warning: the run ended done without an answer');
  }
  if (outcome.status !== 'done' && outcome.outputTail.trim().length > 0) {
    const tail = outcome.outputTail.slice(-OUTPUT_TAIL_SHOWN).trimEnd();
    progress.say(`the child's last output:\n${tail}`);
  }
}

export async function watch(run: AsyncIterable<RunEvent>, progress: Progress, writer: OutputWriter, marks: EventMarks): Promise<void> {
  try {
    for await (const event of run) {
      progress.event(event);
      reportNotable(event, progress);
      await writer.event(event);
      marks.passed(event);
    }
  } finally {
    marks.end();
  }
}

/** Events worth a message in every progress mode: rejected lines and the child's own errors. */
function reportNotable(event: RunEvent, progress: Progress): void {
  if (event.type === 'rejected') {
    progress.say(`rejected an event line (${event.code}${event.fatal ? ', fatal' : ''}): ${event.reason}`);
  } else if (event.type === 'error' && event.error !== undefined) {
    progress.say(`the child reported an error: ${event.error}`);
  }
}

/** What stopping needs of a run, local or queued. */
interface Stoppable {
  terminate(reason: string): unknown;
  kill(reason: string): unknown;
}

/**
 * SIGINT/SIGTERM once cancels the run (the normal backstop), twice kills its tree now; a reader that
 * closes stdout cancels it too. Returns the remover of the signal handlers.
 */
export function stopOnSignalsAndClosedStdout(run: Stoppable, progress: Progress, stdout: Stdout): () => void {
  const removeSignalHandlers = handleSignals({
    cancel: (signal) => {
      progress.say(`${signal}: cancelling the run (send it again to kill the child at once)`);
      void run.terminate(`supervise received ${signal}`);
    },
    killNow: (signal) => {
      progress.say(`${signal} again: killing the child's process tree now`);
      void run.kill(`supervise received ${signal} twice`);
    },
  });
  stdout.onGone(() => {
    progress.say('stdout was closed by its reader; cancelling the run');
    void run.terminate('stdout closed');
  });
  return removeSignalHandlers;
}
