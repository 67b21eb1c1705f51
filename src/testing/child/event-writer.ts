// The event file writer: stamps seq, applies Fen's transport bounds, writes whole lines (or torn ones on request).
import { ftruncateSync, openSync, writeSync } from 'node:fs';
import { createSender, encode, MAX_LINE_BYTES, TRANSPORT_BOUNDS } from '../../wire/index.js';
import type { JsonObject, JsonValue, WireEventType } from '../../wire/index.js';
import type { RawLine } from '../scenario.js';
import { utf8Prefix } from '../text.js';

/** Lifecycle events carry no display fields: no timestamp, no transport bounds. */
const LIFECYCLE: ReadonlySet<string> = new Set(['ready', 'turn-started', 'turn-complete', 'control-ack', 'result', 'exit']);

export interface EventWriterHooks {
  /** Called after each line was written whole (for the transcript). */
  written(line: string, raw: boolean): void;
  /** Called when the sender refused an event (the child drops it, leaving a gap, as Fen's does). */
  dropped(type: string, reason: string): void;
  /** Blocks between the pieces of a split line. */
  sleep(ms: number): void;
}

export class EventWriter {
  private readonly sender;
  private readonly fd: number;
  private split: { pieces: number; gapMs: number } | undefined;

  constructor(
    path: string,
    private readonly runId: string,
    private readonly hooks: EventWriterHooks,
  ) {
    this.sender = createSender('event', runId);
    // A kept-open fd and synchronous whole-line writes: appends never interleave with a reader's view.
    this.fd = openSync(path, 'a');
  }

  /** The seq of the last line written by the sender. */
  get lastSeq(): number {
    return this.sender.lastSeq;
  }

  /** From now on every line is written in `pieces` writes `gapMs` apart, cut inside multi-byte characters. */
  splitWrites(pieces: number, gapMs: number): void {
    this.split = { pieces: Math.max(2, pieces), gapMs: Math.max(0, gapMs) };
  }

  /** Truncates the event file; later appends land at the new end. */
  truncate(toBytes: number): void {
    ftruncateSync(this.fd, Math.max(0, toBytes));
  }

  /** Whether an event of `type` with `payload` would fit one line with the next seq. */
  fits(type: WireEventType, payload: Record<string, unknown>): boolean {
    return encode({ v: 1, seq: this.sender.lastSeq + 1, type, run: this.runId, ...payload }, 'event').ok;
  }

  /**
   * Encodes and writes one event; false when the sender refused it. Display events get a timestamp and
   * Fen's transport bounds, unless `unbounded` (flood load lines, which must keep their size).
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
      this.hooks.dropped(type, result.rejection.reason);
      return false;
    }
    this.writeLine(result.line, true, false);
    return true;
  }

  /** Writes a line outside the protocol on purpose. */
  writeRaw(raw: RawLine): void {
    const envelope = (type: string, extra: Record<string, unknown> = {}) => ({
      v: 1,
      seq: this.sender.lastSeq + 1,
      type,
      run: this.runId,
      ...extra,
    });
    let line: string;
    let consumesSeq = false;
    switch (raw.kind) {
      case 'garbage':
        line = raw.text ?? 'this is not json {';
        break;
      case 'oversized': {
        const bytes = Math.max(MAX_LINE_BYTES, raw.bytes ?? 70_000);
        const head = JSON.stringify(envelope('assistant-text-delta', { delta: '' })).slice(0, -2);
        line = `${head}${'x'.repeat(Math.max(0, bytes - head.length - 2))}"}`;
        break;
      }
      case 'out-of-order':
        line = JSON.stringify({ ...envelope('info'), seq: Math.max(1, this.sender.lastSeq) });
        break;
      case 'wrong-version':
        line = JSON.stringify({ ...envelope('info'), v: raw.v ?? 2 });
        consumesSeq = true;
        break;
      case 'foreign-run':
        line = JSON.stringify({ ...envelope('info'), run: raw.run ?? 'another-run' });
        consumesSeq = true;
        break;
      case 'unknown-type':
        line = JSON.stringify(envelope(raw.type ?? 'mystery-event'));
        consumesSeq = true;
        break;
      case 'invalid-payload':
        line = JSON.stringify(envelope('turn-started'));
        consumesSeq = true;
        break;
      case 'literal':
        this.writeLine(raw.line, raw.newline ?? true, true);
        return;
    }
    // The raw line used the next seq: advance the sender past it (the probe line is never written).
    if (consumesSeq) this.sender.next('info', {});
    this.writeLine(line, true, true);
  }

  private writeLine(line: string, newline: boolean, raw: boolean): void {
    const bytes = Buffer.from(newline ? `${line}\n` : line, 'utf8');
    if (this.split === undefined) {
      writeSync(this.fd, bytes);
    } else {
      for (const [index, piece] of splitInsideCharacters(bytes, this.split.pieces).entries()) {
        if (index > 0) this.hooks.sleep(this.split.gapMs);
        writeSync(this.fd, piece);
      }
    }
    this.hooks.written(line, raw);
  }
}

/** Cuts strings in a display payload to Fen's transport bounds; says whether anything was cut. */
function boundStrings(value: JsonValue, depth = 0): { value: JsonValue; cut: boolean } {
  if (typeof value === 'string') {
    const bounded = utf8Prefix(value, TRANSPORT_BOUNDS.stringBytes);
    return { value: bounded, cut: bounded.length !== value.length };
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

/** Cuts a line's bytes into `pieces` writes, moving each cut into a multi-byte character when one is near. */
function splitInsideCharacters(bytes: Buffer, pieces: number): Buffer[] {
  const cuts: number[] = [];
  for (let index = 1; index < pieces; index += 1) {
    let cut = Math.floor((bytes.length * index) / pieces);
    for (let probe = cut; probe < Math.min(bytes.length, cut + 64); probe += 1) {
      if (((bytes[probe] ?? 0) & 0xc0) === 0x80) {
        cut = probe;
        break;
      }
    }
    if (cut > (cuts[cuts.length - 1] ?? 0) && cut < bytes.length) cuts.push(cut);
  }
  const parts: Buffer[] = [];
  let start = 0;
  for (const cut of cuts) {
    parts.push(bytes.subarray(start, cut));
    start = cut;
  }
  parts.push(bytes.subarray(start));
  return parts;
}
