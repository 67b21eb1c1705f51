// The fake fa's transcript: what one process wrote on stdout and stderr, the signals it got, its exit; and the reader.
import type { JsonObject } from '../../wire/index.js';
import { readTranscriptFile, splitStdout } from '../kit.js';
import type { FaOutputMode } from './args.js';

/** One write to stdout, exactly as written (a frame with its newline, a prose chunk, a torn frame). */
export interface FaStdoutEntry {
  kind: 'stdout';
  /** Milliseconds since the process started. */
  at: number;
  text: string;
  /** The frame's `type` (frames written by the fake's frame builders). */
  type?: string;
  /** Written on purpose outside the frame catalog (garbage, unknown frames, a torn frame, ...). */
  raw?: boolean;
}

export interface FaStderrEntry {
  kind: 'stderr';
  at: number;
  text: string;
}

/** A signal the process received and what it did about it. */
export interface FaSignalEntry {
  kind: 'signal';
  at: number;
  signal: 'SIGINT' | 'SIGTERM';
  action: 'cancel' | 'ignored';
}

export interface FaNoteEntry {
  kind: 'note';
  at: number;
  what: string;
  detail?: JsonObject;
}

export interface FaExitEntry {
  kind: 'exit';
  at: number;
  code: number;
}

export type FaTranscriptEntry = FaStdoutEntry | FaStderrEntry | FaSignalEntry | FaNoteEntry | FaExitEntry;

/** Everything one fake fa process saw and did, in order. */
export interface FaTranscript {
  pid: number;
  scenario: string;
  /** The command line after the script. */
  argv: string[];
  /** How stdout was used (`prose` also when the scenario forces it). */
  mode: FaOutputMode;
  task: string;
  entries: FaTranscriptEntry[];
  /** Everything written on stdout. */
  stdout: string;
  /** Every whole stdout line, in order (frames and raw lines in events mode, prose lines otherwise). */
  lines: string[];
  /** The stdout lines that are JSON objects, parsed, in order. */
  frames: JsonObject[];
  /** What follows the last newline on stdout (a frame torn by a kill), when anything does. */
  partial?: string;
  /** Everything written on stderr. */
  stderr: string;
  signals: FaSignalEntry[];
  /** Pids of the grandchildren it spawned. */
  grandchildren: number[];
  /** The exit code it chose; undefined when it was killed. */
  exitCode?: number;
  /** Whether it wrote its `exit` entry (false: killed, or still running). */
  complete: boolean;
}

/** Parses a fake fa transcript file; a torn last line (killed mid-write) is ignored. */
export function readFaTranscript(path: string): FaTranscript {
  const { pid, scenario, header, entries } = readTranscriptFile<FaTranscriptEntry>(path);
  const transcript: FaTranscript = {
    pid,
    scenario,
    argv: Array.isArray(header['argv']) ? (header['argv'] as string[]) : [],
    mode: (header['mode'] as FaOutputMode | undefined) ?? 'prose',
    task: typeof header['task'] === 'string' ? header['task'] : '',
    entries,
    stdout: '',
    lines: [],
    frames: [],
    stderr: '',
    signals: [],
    grandchildren: [],
    complete: false,
  };
  for (const entry of entries) {
    if (entry.kind === 'stdout') transcript.stdout += entry.text;
    else if (entry.kind === 'stderr') transcript.stderr += entry.text;
    else if (entry.kind === 'signal') transcript.signals.push(entry);
    else if (entry.kind === 'note' && entry.what === 'grandchild' && typeof entry.detail?.['pid'] === 'number') {
      transcript.grandchildren.push(entry.detail['pid']);
    } else if (entry.kind === 'exit') {
      transcript.exitCode = entry.code;
      transcript.complete = true;
    }
  }
  const { lines, objects, partial } = splitStdout(transcript.stdout);
  transcript.lines = lines;
  transcript.frames = objects as JsonObject[];
  if (partial !== undefined) transcript.partial = partial;
  return transcript;
}
