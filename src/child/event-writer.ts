// The child's event file writer: stamps seq, applies Fen's transport bounds to display events, writes whole lines.
import { openSync, writeSync } from 'node:fs';
import { createSender, encode, TRANSPORT_BOUNDS } from '../wire/index.js';
import type { JsonObject, JsonValue, Sender, WireEventType } from '../wire/index.js';
import { utf8Prefix } from '../text/utf8.js';

/** Lifecycle events carry no display fields: no timestamp, no transport bounds. */
const LIFECYCLE: ReadonlySet<string> = new Set(['ready', 'turn-started', 'turn-complete', 'control-ack', 'result', 'exit']);

export interface EventWriterHooks {
  /** Called after each line was written whole. */
  written?(line: string, raw: boolean): void;
  /** Called when the sender refused an event (the child drops it, leaving a gap, as Fen's does). */
  dropped?(type: string, reason: string): void;
}

export class EventWriter {
  protected readonly sender: Sender<'event'>;
  protected readonly fd: number;

  constructor(
    path: string,
    protected readonly runId: string,
    protected readonly hooks: EventWriterHooks = {},
  ) {
    this.sender = createSender('event', runId);
    // A kept-open fd and synchronous whole-line writes: appends never interleave with a reader's view.
    this.fd = openSync(path, 'a');
  }

  /** The seq of the last line written by the sender. */
  get lastSeq(): number {
    return this.sender.lastSeq;
  }

  /** Whether an event of `type` with `payload` would fit one line with the next seq. */
  fits(type: WireEventType, payload: Record<string, unknown>): boolean {
    return encode({ v: 1, seq: this.sender.lastSeq + 1, type, run: this.runId, ...payload }, 'event').ok;
  }

  /**
   * Encodes and writes one event; false when the sender refused it. Display events get a timestamp and
   * Fen's transport bounds, unless `unbounded` (load lines that must keep their size).
   */
  emit(type: WireEventType, payload: Record<string, unknown>, unbounded = false): boolean {
    let body = payload;
    if (unbounded) {
      body = { timestamp: new Date().toISOString(), ...payload };
    } else if (!LIFECYCLE.has(type)) {
      const bounded = boundStrings(payload as JsonObject);
      body = { timestamp: new Date().toISOString(), ...(bounded.value as JsonObject) };
      if (bounded.cut) body['transport-truncated?'] = true;
    }
    const result = this.sender.next(type, body);
    if (!result.ok) {
      this.hooks.dropped?.(type, result.rejection.reason);
      return false;
    }
    this.writeLine(result.line, true, false);
    return true;
  }

  protected writeLine(line: string, newline: boolean, raw: boolean): void {
    this.writeBytes(Buffer.from(newline ? `${line}\n` : line, 'utf8'));
    this.hooks.written?.(line, raw);
  }

  protected writeBytes(bytes: Buffer): void {
    writeSync(this.fd, bytes);
  }
}

/**
 * Cuts strings in a display payload to Fen's transport bounds; says whether anything was cut. A cut
 * string ends with Fen's own note of the cut, as the real child writes it (its wording says "tool
 * output" for every string).
 */
export function boundStrings(value: JsonValue, depth = 0): { value: JsonValue; cut: boolean } {
  if (typeof value === 'string') {
    const bounded = utf8Prefix(value, TRANSPORT_BOUNDS.stringBytes);
    if (bounded.length === value.length) return { value, cut: false };
    const note = `[fen: tool output truncated: kept ${Buffer.byteLength(bounded)} sanitized bytes from ${Buffer.byteLength(value)} input bytes]`;
    return { value: `${bounded}\n\n${note}`, cut: true };
  }
  if (value === null || typeof value !== 'object') return { value, cut: false };
  if (depth >= TRANSPORT_BOUNDS.depth) return { value: null, cut: true };
  let cut = false;
  if (Array.isArray(value)) {
    const items = value.slice(0, TRANSPORT_BOUNDS.tableEntries).map((item) => {
      const bounded = boundStrings(item, depth + 1);
      cut ||= bounded.cut;
      return bounded.value;
    });
    return { value: items, cut: cut || items.length !== value.length };
  }
  const entries = Object.entries(value);
  const result: JsonObject = {};
  for (const [key, item] of entries.slice(0, TRANSPORT_BOUNDS.tableEntries)) {
    const bounded = boundStrings(item, depth + 1);
    cut ||= bounded.cut;
    result[key] = bounded.value;
  }
  return { value: result, cut: cut || entries.length > TRANSPORT_BOUNDS.tableEntries };
}
