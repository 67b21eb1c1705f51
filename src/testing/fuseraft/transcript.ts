// The fake fuseraft's transcript: every stdin line and what it was taken as, each approval and question with the
// line that answered it, every stdout write, signals and the exit; and the reader.
import type { JsonObject } from '../../wire/index.js';
import { readTranscriptFile, splitStdout } from '../kit.js';
import type { FuseraftMode } from './scenario.js';

export interface FuseraftStdoutEntry {
  kind: 'stdout';
  /** Milliseconds since the process started. */
  at: number;
  /** Exactly what was written (an event line with its newline, or noise). */
  text: string;
  type?: string;
  /** Written on purpose outside the protocol. */
  raw?: boolean;
}

/**
 * What a stdin line was taken as:
 * - `user_input`: a message that started a turn (repl, idle);
 * - `interjection`: a `user_input` while a turn ran (joined, carried or dropped later: see the `interjection` events);
 * - `interrupt`: cancelled the running turn (repl) or the session (bridge);
 * - `interrupt-idle`: an interrupt with no turn running (discarded, as fuseraft does);
 * - `approval_response` / `question_response`: answered the pending request (see `approvals` / `questions`);
 * - `early-response`: an `approval_response` or `question_response` with no request pending: it is kept and
 *   answers the next request of its kind (a client that sends one too many gets the wrong answer applied later);
 * - `denial`: another line read while an approval was pending: counts as a denial;
 * - `message-from-other-line`: a line that is not `user_input` read while idle: fuseraft takes its text
 *   (or the raw line) as the next message, so it starts a turn;
 * - `ignored`: read and not used (bridge: `user_input` and anything else but responses and interrupts).
 */
export type FuseraftInputRole =
  | 'user_input'
  | 'interjection'
  | 'interrupt'
  | 'interrupt-idle'
  | 'approval_response'
  | 'question_response'
  | 'early-response'
  | 'denial'
  | 'message-from-other-line'
  | 'ignored';

export interface FuseraftStdinEntry {
  kind: 'stdin';
  at: number;
  line: string;
  as: FuseraftInputRole;
}

/** One approval_request and what answered it. */
export interface FuseraftApprovalEntry {
  kind: 'approval';
  at: number;
  /** 0-based, in the order the requests were written. */
  index: number;
  request: JsonObject;
  /** The stdin line that answered it; null when stdin ended or an interrupt cancelled it first. */
  line: string | null;
  approved: boolean;
  how: 'response' | 'early-response' | 'malformed' | 'other-line' | 'end-of-stdin' | 'interrupted';
}

export interface FuseraftQuestionEntry {
  kind: 'question';
  at: number;
  index: number;
  request: JsonObject;
  line: string | null;
  answer: string | null;
  how: 'response' | 'early-response' | 'malformed' | 'end-of-stdin' | 'interrupted';
}

export interface FuseraftSignalEntry {
  kind: 'signal';
  at: number;
  signal: 'SIGINT' | 'SIGTERM';
  action: 'interrupt' | 'interrupt-idle' | 'ignored';
}

export interface FuseraftNoteEntry {
  kind: 'note';
  at: number;
  what: string;
  detail?: JsonObject;
}

export interface FuseraftExitEntry {
  kind: 'exit';
  at: number;
  code: number;
}

export type FuseraftTranscriptEntry =
  | FuseraftStdoutEntry
  | FuseraftStdinEntry
  | FuseraftApprovalEntry
  | FuseraftQuestionEntry
  | FuseraftSignalEntry
  | FuseraftNoteEntry
  | FuseraftExitEntry;

/** Everything one fake fuseraft process saw and did, in order. */
export interface FuseraftTranscript {
  pid: number;
  scenario: string;
  mode: FuseraftMode;
  argv: string[];
  entries: FuseraftTranscriptEntry[];
  stdout: string;
  /** Whole stdout lines (events and noise). */
  lines: string[];
  /** The stdout lines that are JSON objects, parsed. */
  events: JsonObject[];
  /** Every stdin line, in order, with what it was taken as. */
  inputs: FuseraftStdinEntry[];
  /** Every approval_request, in order, with the line that answered it. */
  approvals: FuseraftApprovalEntry[];
  questions: FuseraftQuestionEntry[];
  /** Inputs a correct client never causes: early responses, other lines taken as messages or denials, ignored lines. */
  unexpected: FuseraftStdinEntry[];
  signals: FuseraftSignalEntry[];
  grandchildren: number[];
  /** The exit code it chose; undefined when it was killed. */
  exitCode?: number;
  complete: boolean;
}

const UNEXPECTED: ReadonlySet<FuseraftInputRole> = new Set(['early-response', 'denial', 'message-from-other-line', 'ignored']);

/** Parses a fake fuseraft transcript file; a torn last line (killed mid-write) is ignored. */
export function readFuseraftTranscript(path: string): FuseraftTranscript {
  const { pid, scenario, header, entries } = readTranscriptFile<FuseraftTranscriptEntry>(path);
  const transcript: FuseraftTranscript = {
    pid,
    scenario,
    mode: header['mode'] === 'bridge' ? 'bridge' : 'repl',
    argv: Array.isArray(header['argv']) ? (header['argv'] as string[]) : [],
    entries,
    stdout: '',
    lines: [],
    events: [],
    inputs: [],
    approvals: [],
    questions: [],
    unexpected: [],
    signals: [],
    grandchildren: [],
    complete: false,
  };
  for (const entry of entries) {
    if (entry.kind === 'stdout') transcript.stdout += entry.text;
    else if (entry.kind === 'stdin') {
      transcript.inputs.push(entry);
      if (UNEXPECTED.has(entry.as)) transcript.unexpected.push(entry);
    } else if (entry.kind === 'approval') transcript.approvals.push(entry);
    else if (entry.kind === 'question') transcript.questions.push(entry);
    else if (entry.kind === 'signal') transcript.signals.push(entry);
    else if (entry.kind === 'note' && entry.what === 'grandchild' && typeof entry.detail?.['pid'] === 'number') {
      transcript.grandchildren.push(entry.detail['pid']);
    } else if (entry.kind === 'exit') {
      transcript.exitCode = entry.code;
      transcript.complete = true;
    }
  }
  const { lines, objects } = splitStdout(transcript.stdout);
  transcript.lines = lines;
  transcript.events = objects as JsonObject[];
  return transcript;
}
