// The fake child's event writer: the child SDK's writer plus torn, raw and truncating writes for misbehaviours.
import { ftruncateSync } from 'node:fs';
import { EventWriter } from '../../child/event-writer.js';
import type { EventWriterHooks } from '../../child/event-writer.js';
import { MAX_LINE_BYTES } from '../../wire/index.js';
import type { WireEventType } from '../../wire/index.js';
import type { RawLine } from '../scenario.js';

export interface FakeEventWriterHooks extends Required<EventWriterHooks> {
  /** Blocks between the pieces of a split line. */
  sleep(ms: number): void;
}

export class FakeEventWriter extends EventWriter {
  private split: { pieces: number; gapMs: number } | undefined;

  constructor(path: string, runId: string, private readonly fakeHooks: FakeEventWriterHooks) {
    super(path, runId, fakeHooks);
  }

  /** From now on every line is written in `pieces` writes `gapMs` apart, cut inside multi-byte characters. */
  splitWrites(pieces: number, gapMs: number): void {
    this.split = { pieces: Math.max(2, pieces), gapMs: Math.max(0, gapMs) };
  }

  /** Writes one event exactly as given: no timestamp, no transport bounds (a replay's recorded events). */
  emitAsIs(type: WireEventType, payload: Record<string, unknown>): boolean {
    const result = this.sender.next(type, payload);
    if (!result.ok) {
      this.fakeHooks.dropped(type, result.rejection.reason);
      return false;
    }
    this.writeLine(result.line, true, false);
    return true;
  }

  /** Truncates the event file; later appends land at the new end. */
  truncate(toBytes: number): void {
    ftruncateSync(this.fd, Math.max(0, toBytes));
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

  protected override writeBytes(bytes: Buffer): void {
    if (this.split === undefined) return super.writeBytes(bytes);
    for (const [index, piece] of splitInsideCharacters(bytes, this.split.pieces).entries()) {
      if (index > 0) this.fakeHooks.sleep(this.split.gapMs);
      super.writeBytes(piece);
    }
  }
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
