// A journal turned into a replay script: the child's events in order, normalized, each ack tied to the control it answers, and how the child ended.
import type { JournalEntry } from '../../journal/entries.js';
import type { Journal } from '../../journal/read-journal.js';
import type { AckOrigin } from '../../run/handle.js';
import type { RunEvent } from '../../protocol/events.js';
import type { WireControlType } from '../../wire/index.js';

/** How the replay spaces the events: none (the default), as recorded, or as recorded sped up. */
export type ReplayTiming = 'compressed' | 'kept' | { speed: number };

/** A control the recording saw written, in order: the replay expects the same ones, in the same order. */
export interface ReplayControl {
  type: WireControlType;
  origin: AckOrigin;
  /** When the recording wrote it (ms since the journal started). */
  at: number;
  /** `prompt`, `steer`, `follow-up`: the text the recording sent (what replayRun sends again). */
  text?: string;
  /** `finalize`: the note the recording sent, if any. */
  note?: string;
}

/** One event of the child's, normalized (see {@link replayScriptOf}). */
export interface ReplayStep {
  /** When the recording saw it (ms since the journal started). */
  at: number;
  /** The event without its envelope; its control refs are indexes into `controls` (see `refs`). */
  event: Record<string, unknown> & { type: string };
  /** The control (index into `controls`) that must have arrived before this event: an ack waits for its control. */
  after?: number;
}

/** How the recorded child ended. */
export interface ReplayEnd {
  /** The child said how it ended: its own `exit` line, or an exit code its driver made one of (the replay's last step is it). */
  exitLine: boolean;
  /** The child was killed by the parent's kill ladder: the replay child lingers until it is killed too. */
  killed: boolean;
  /** It outlived SIGTERM (the ladder needed SIGKILL): the replay child ignores SIGTERM too. */
  escalated: boolean;
  /** Its exit code (null: a signal, or an adopted child whose code was not known). */
  exitCode: number | null;
}

/** Everything a replay child needs: built once from a journal, then played by the process or in memory. */
export interface ReplayScript {
  protocol: string;
  /** The task prompt the recording started with (start the replay with it to get the same acks). */
  task?: string;
  controls: ReplayControl[];
  steps: ReplayStep[];
  end: ReplayEnd;
  /** The recorded answer (`outcome.finalText`), which the replay's result carries whole. */
  finalText?: string;
  /** The peer's own session id the recording reported (`outcome.sessionId`): an in-memory replay reports it too. */
  sessionId?: string;
}

/** Where normalized values stand for the recording's own. */
export const REPLAY_PLACEHOLDERS = {
  /** Timestamps count from this instant by the recorded `at`. */
  epochMs: Date.UTC(2000, 0, 1),
  /** Every working-directory field (`cwd`, `physicalCwd`, `requestedCwd`). */
  cwd: '/replay/cwd',
} as const;

const CWD_FIELDS = ['cwd', 'physicalCwd', 'requestedCwd'] as const;

/**
 * The replay script of a journal. The child's events keep their order and shape; normalized are the
 * envelope (a replay stamps its own seqs and run id), `timestamp` (the recorded `at` after 2000-01-01),
 * the working-directory fields (`/replay/cwd`), the `runId` display field (dropped: the live run's id is
 * the run's own), `finalTextPath` (a replay writes its own file when the answer does not fit a line),
 * and control refs (`ref`, `refs`), which become indexes into the recorded controls. subvisor's own
 * synthetic `exit` is not a child's event: it becomes {@link ReplayEnd}; an exit made from an exit code
 * (HEP's) is how the child said it ended, replayed as an `exit` line.
 * Throws when the journal holds no start (not a journal) or lines were left out (a truncated journal
 * cannot be replayed faithfully).
 */
export function replayScriptOf(journal: Journal): ReplayScript {
  if (journal.truncated) throw new Error('this journal reached its bound and left lines out: it cannot be replayed faithfully');
  const controls: ReplayControl[] = [];
  const indexOfSeq = new Map<number, number>();
  const steps: ReplayStep[] = [];
  let task: string | undefined;
  let childExit = false;
  for (const entry of journal.entries) {
    if (entry.kind === 'control') {
      indexOfSeq.set(entry.seq, controls.length);
      controls.push({
        type: entry.control,
        origin: entry.origin,
        at: entry.at,
        ...(entry.text === undefined ? {} : { text: entry.text }),
        ...(entry.note === undefined ? {} : { note: entry.note }),
      });
      if (entry.origin === 'task') task = entry.text;
    } else if (entry.kind === 'event') {
      const step = stepOf(entry, indexOfSeq);
      if (step === undefined) continue;
      if (step.event.type === 'exit') childExit = true;
      steps.push(step);
    }
  }
  const outcome = journal.outcome?.outcome;
  return {
    protocol: journal.start.protocol,
    ...(task === undefined ? {} : { task }),
    controls,
    steps,
    end: { exitLine: childExit, killed: outcome?.killed ?? true, escalated: outcome?.escalated ?? false, exitCode: outcome?.exitCode ?? null },
    ...(outcome?.finalText === undefined ? {} : { finalText: outcome.finalText }),
    ...(outcome?.sessionId === undefined ? {} : { sessionId: outcome.sessionId }),
  };
}

/** The normalized step of one recorded event, or undefined for subvisor's own exit. */
function stepOf(entry: Extract<JournalEntry, { kind: 'event' }>, indexOfSeq: ReadonlyMap<number, number>): ReplayStep | undefined {
  const recorded = entry.event as RunEvent;
  if (recorded.type === 'exit' && recorded.synthetic === true) return undefined;
  const { v: _v, seq: _seq, run: _run, ...rest } = recorded as RunEvent & { v?: number; seq?: number; run?: string };
  const event: ReplayStep['event'] = { ...rest };
  if (typeof event['timestamp'] === 'string') event['timestamp'] = new Date(REPLAY_PLACEHOLDERS.epochMs + entry.at).toISOString();
  for (const field of CWD_FIELDS) if (typeof event[field] === 'string') event[field] = REPLAY_PLACEHOLDERS.cwd;
  delete event['runId'];
  delete event['finalTextPath'];
  if (recorded.type === 'exit') {
    // The child's own words: the run's verdict (status) is the parent's, the exit code the process's.
    if (recorded.childStatus !== undefined) event['status'] = recorded.childStatus;
    delete event['childStatus'];
    delete event['exitCode'];
  }
  const step: ReplayStep = { at: entry.at, event };
  const ref = event['ref'];
  if (typeof ref === 'number') {
    const index = indexOfSeq.get(ref);
    if (index === undefined) delete event['ref'];
    else event['ref'] = index;
    if (index !== undefined && recorded.type === 'control-ack') step.after = index;
  }
  const refs = event['refs'];
  if (Array.isArray(refs)) event['refs'] = refs.flatMap((seq) => (typeof seq === 'number' && indexOfSeq.has(seq) ? [indexOfSeq.get(seq)!] : []));
  return step;
}

/** The wait before a step: from the later of the previous step and the control it waited for. */
export function delayOf(timing: ReplayTiming, step: ReplayStep, previousAt: number, controls: readonly ReplayControl[]): number {
  if (timing === 'compressed') return 0;
  const speed = timing === 'kept' ? 1 : timing.speed;
  const since = Math.max(previousAt, step.after === undefined ? 0 : (controls[step.after]?.at ?? 0));
  return Math.max(0, (step.at - since) / speed);
}
