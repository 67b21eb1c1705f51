// The fake child's transcript: what it saw and did, written as JSONL by the child and read back by the kit.
import { readTranscriptFile } from './kit.js';
import type { JsonObject, Rejection, RunState, WireControl } from '../wire/index.js';

/** A control line the child read, what it made of it, and the ack it sent. */
export interface TranscriptControl {
  kind: 'control';
  /** Milliseconds since the child started. */
  at: number;
  /** The line exactly as read (without its newline); a too-long line is cut to its first 200 bytes. */
  raw: string;
  /** The decoded control when the line was valid. */
  message?: WireControl;
  /** Why the line was rejected (invalid line, foreign run, or the state table). */
  rejection?: Rejection | { code: 'foreign-run' | 'state'; reason: string };
  /** The `control-ack` payload written for it (`status`, `ref`, `reason`); absent when no ack was sent. */
  ack?: { status: 'accepted' | 'applied' | 'rejected'; ref?: number; reason?: string };
  /** What the child did with it (`start-turn`, `queue-steer`, `ignored`, ...). */
  action?: string;
  stateBefore: RunState;
  state: RunState;
}

/** An event line the child wrote (whole, as one entry, even when written in pieces). */
export interface TranscriptEvent {
  kind: 'event';
  at: number;
  /** The line without its newline. Raw misbehaviour lines appear here too. */
  line: string;
  type?: string;
  seq?: number;
  /** True for lines written on purpose outside the protocol (garbage, out-of-order, ...). */
  raw?: boolean;
  state: RunState;
}

/** A state change of the child's own run state. */
export interface TranscriptState {
  kind: 'state';
  at: number;
  from: RunState;
  state: RunState;
  cause: string;
}

/** Something the child did outside the protocol: a misbehaviour fired, a grandchild spawned, a flood written. */
export interface TranscriptNote {
  kind: 'note';
  at: number;
  what: string;
  detail?: JsonObject;
  state: RunState;
}

/** The child's last entry: its final state and exit code. */
export interface TranscriptExit {
  kind: 'exit';
  at: number;
  state: RunState;
  code: number;
}

export type TranscriptEntry = TranscriptControl | TranscriptEvent | TranscriptState | TranscriptNote | TranscriptExit;

/** Everything one fake-child process saw and did, in order. */
export interface ChildTranscript {
  /** The child's pid. */
  pid: number;
  /** The scenario's name (or `custom`). */
  scenario: string;
  entries: TranscriptEntry[];
  /** Every control line read, in order. */
  controls: TranscriptControl[];
  /** Every event line written, in order. */
  events: TranscriptEvent[];
  /** The child's state after each entry, starting with `starting` (consecutive repeats collapsed). */
  states: RunState[];
  /** The state the child ended in (its last entry's state). */
  finalState: RunState;
  /** The exit code the child chose; undefined when it was killed or crashed without telling. */
  exitCode?: number;
  /** Pids of the grandchildren it spawned. */
  grandchildren: number[];
  /** Whether the child wrote its `exit` entry (false: killed, crashed, or still running). */
  complete: boolean;
}

/** The first line of a transcript file: who wrote it. */
export interface TranscriptHeader {
  kind: 'header';
  pid: number;
  scenario: string;
}

/** Parses a transcript file; a torn last line (the child was killed mid-write) is ignored. */
export function readTranscript(path: string): ChildTranscript {
  const { pid, scenario, entries } = readTranscriptFile<TranscriptEntry>(path);
  return summarise(pid, scenario, entries);
}

function summarise(pid: number, scenario: string, entries: TranscriptEntry[]): ChildTranscript {
  const states: RunState[] = ['starting'];
  const grandchildren: number[] = [];
  let exitCode: number | undefined;
  for (const entry of entries) {
    if (states[states.length - 1] !== entry.state) states.push(entry.state);
    if (entry.kind === 'exit') exitCode = entry.code;
    if (entry.kind === 'note' && entry.what === 'grandchild' && typeof entry.detail?.['pid'] === 'number') {
      grandchildren.push(entry.detail['pid']);
    }
  }
  const transcript: ChildTranscript = {
    pid,
    scenario,
    entries,
    controls: entries.filter((entry): entry is TranscriptControl => entry.kind === 'control'),
    events: entries.filter((entry): entry is TranscriptEvent => entry.kind === 'event'),
    states,
    finalState: states[states.length - 1] ?? 'starting',
    grandchildren,
    complete: exitCode !== undefined,
  };
  if (exitCode !== undefined) transcript.exitCode = exitCode;
  return transcript;
}
