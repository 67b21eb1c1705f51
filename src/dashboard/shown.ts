// What the page shows of a run's events, its outcome and its answer: one-line summaries and capped copies of the child's (untrusted) text.
import type { Outcome, RunEvent } from '../api/types.js';

/** Longest one-line summary of an event (the table's "last event"). */
const SUMMARY_CHARS = 200;
/** Longest JSON of one event kept for the page (the rest is cut and says so). */
const EVENT_JSON_CHARS = 4096;
/** Longest answer sent to the page. */
export const ANSWER_CHARS = 256 * 1024;
/** Longest task kept for the page. */
export const TASK_CHARS = 64 * 1024;

/** One event as the page lists it. */
export interface ShownEvent {
  /** Its number in the run (from 1): a page that reconnects asks from there. */
  n: number;
  /** When the dashboard got it (epoch ms). */
  at: number;
  type: string;
  /** A one-line summary; for a text or thinking delta, the delta itself (the page joins them). */
  text: string;
  /** The event as JSON, cut at 4 KiB. */
  json: string;
}

/** The outcome as the page shows it: everything but the answer (sent apart) and the output tail (capped). */
export interface ShownOutcome {
  status: string;
  errorCode: string | null;
  error: string | null;
  truncated: boolean;
  turns: number;
  durationMs: number;
  exitCode: number | null;
  signal: string | null;
  outputTail: string;
}

/** `text` cut to `chars` characters, marked when cut. */
export function cut(text: string, chars: number): string {
  return text.length <= chars ? text : `${text.slice(0, chars)}… [${text.length - chars} more characters]`;
}

/** One line: newlines and other control characters as spaces, cut to the summary's length. */
function line(text: string): string {
  return cut(text.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim(), SUMMARY_CHARS);
}

/** The one-line summary of an event. */
export function summary(event: RunEvent): string {
  switch (event.type) {
    case 'assistant-text-delta':
    case 'assistant-thinking-delta':
      return cut(event.delta ?? '', EVENT_JSON_CHARS);
    case 'assistant-text':
    case 'assistant-thinking':
    case 'user':
      return line(event.text ?? '');
    case 'tool-call':
      return line(`${event.name}`);
    case 'tool-result':
      return line(`${event.name} ${event.isError ? 'failed' : 'returned'}`);
    case 'turn-started':
      return `turn ${event.turn} started`;
    case 'turn-complete':
      return line(`turn ${event.turn} complete (${event.stopReason})`);
    case 'control-ack':
      return line(`${event.status}${event.ref === undefined ? '' : ` (seq ${event.ref})`}${event.reason === undefined ? '' : `: ${event.reason}`}`);
    case 'steering-injected':
    case 'follow-up-injected':
      return line(event.text ?? `seq ${event.ref ?? '?'}`);
    case 'error':
      return line(event.error ?? 'error');
    case 'rejected':
      return line(`${event.code}: ${event.reason}`);
    case 'exit':
      return line(`${event.status}${event.error === undefined ? '' : `: ${event.error}`}`);
    case 'info':
      return line(event.summary ?? event.nativeType ?? event.queue ?? event.hepType ?? 'info');
    case 'llm-start':
    case 'agent-started':
      return line([event.provider, event.model].filter((part) => part !== undefined).join(' '));
    default:
      return '';
  }
}

/** An event for the page's list. */
export function shownEvent(event: RunEvent, n: number, at: number): ShownEvent {
  return { n, at, type: event.type, text: summary(event), json: cut(JSON.stringify(event), EVENT_JSON_CHARS) };
}

/** The outcome for the page (its answer goes apart: {@link ANSWER_CHARS}). */
export function shownOutcome(outcome: Outcome): ShownOutcome {
  return {
    status: outcome.status,
    errorCode: outcome.errorCode ?? null,
    error: outcome.error === undefined ? null : cut(outcome.error, 4096),
    truncated: outcome.truncated,
    turns: outcome.turns,
    durationMs: outcome.durationMs,
    exitCode: outcome.exitCode,
    signal: outcome.signal,
    outputTail: cut(outcome.outputTail ?? '', 8192),
  };
}
