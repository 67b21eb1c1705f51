// Runs every wire fixture through decode, encode and a receiver: valid streams, edge cases, seq sequences.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createReceiver, decode, encode, validate } from '../../../src/wire/index.js';
import type { Direction, Rejection, RejectionCode, WireMessage } from '../../../src/wire/index.js';
import { CONTROL_SCHEMAS, EVENT_SCHEMAS } from '../../../src/wire/schema.js';

const fixture = (name: string) => new URL(`../../../fixtures/wire/${name}`, import.meta.url);

/** Splits on LF only: fixture strings may hold U+2028, which line readers wrongly treat as a break. */
function jsonLines(name: string): string[] {
  const text = readFileSync(fixture(name), 'utf8');
  expect(text.endsWith('\n')).toBe(true);
  return text.slice(0, -1).split('\n');
}

interface EdgeCase {
  direction: Direction;
  code: RejectionCode | null;
  line: unknown;
  seq?: number;
  type?: string;
  run?: string;
  note: string;
  encode?: RejectionCode;
}

interface SequenceCase {
  name: string;
  direction: Direction;
  steps: { line: string; code: RejectionCode | null; lastSeq: number }[];
}

const STREAMS: Record<string, Direction> = {
  'events.jsonl': 'event',
  'events-older-child.jsonl': 'event',
  'events-failed.jsonl': 'event',
  'controls.jsonl': 'control',
};

describe('valid streams', () => {
  for (const [name, direction] of Object.entries(STREAMS)) {
    describe(name, () => {
      const lines = jsonLines(name);

      it('decodes every line, with strictly increasing seq and one run id', () => {
        const receiver = createReceiver(direction);
        let last = 0;
        const runs = new Set<string>();
        for (const line of lines) {
          const result = receiver.receive(line);
          if (!result.ok) throw new Error(`${name}: ${result.rejection.reason}\n${line}`);
          expect(result.message.seq).toBeGreaterThan(last);
          last = result.message.seq;
          runs.add(result.message.run);
        }
        expect(runs.size).toBe(1);
        expect(receiver.lastSeq).toBe(last);
      });

      it('round-trips every line through encode, byte for byte', () => {
        for (const line of lines) {
          const decoded = decode(line, direction);
          if (!decoded.ok) throw new Error(decoded.rejection.reason);
          const encoded = encode(decoded.message, direction);
          if (!encoded.ok) throw new Error(encoded.rejection.reason);
          expect(encoded.line).toBe(line);
          expect(decode(encoded.line, direction)).toEqual({ ok: true, message: decoded.message });
        }
      });
    });
  }

  const messagesOf = (direction: Direction) =>
    Object.entries(STREAMS)
      .filter(([, d]) => d === direction)
      .flatMap(([name]) => jsonLines(name).map((line) => JSON.parse(line) as Record<string, unknown>));

  const DISPLAY_FIELDS = ['timestamp', 'summary', 'transport-truncated?', 'run-id', 'agent', 'requested-cwd', 'cwd', 'physical-cwd'];

  it('covers every display field of the display events', () => {
    const messages = messagesOf('event');
    for (const key of DISPLAY_FIELDS) {
      expect(messages.some((message) => message[key] !== undefined), key).toBe(true);
    }
  });

  it('covers every event type and every own field of every event schema', () => {
    const messages = messagesOf('event');
    for (const [type, spec] of EVENT_SCHEMAS) {
      const ofType = messages.filter((message) => message['type'] === type);
      expect(ofType.length, `no ${type} event`).toBeGreaterThan(0);
      for (const field of spec.fields) {
        if (DISPLAY_FIELDS.includes(field.key)) continue;
        expect(
          ofType.some((message) => message[field.key] !== undefined),
          `${type}.${field.key} is never exercised`,
        ).toBe(true);
      }
    }
  });

  it('covers every control type and every field of every control schema', () => {
    const messages = messagesOf('control');
    for (const [type, spec] of CONTROL_SCHEMAS) {
      const ofType = messages.filter((message) => message['type'] === type);
      expect(ofType.length, `no ${type} control`).toBeGreaterThan(0);
      for (const field of spec.fields) {
        expect(ofType.some((message) => message[field.key] !== undefined)).toBe(true);
      }
    }
    expect(messages.some((message) => message['type'] === 'finalize' && message['note'] === undefined)).toBe(true);
  });

  it('includes the optional shapes a parent must accept: ref-less rejected ack, ref-less injection, older context', () => {
    const messages = messagesOf('event');
    expect(messages.some((m) => m['type'] === 'control-ack' && m['status'] === 'rejected' && !('ref' in m))).toBe(true);
    expect(messages.some((m) => m['type'] === 'steering-injected' && !('ref' in m))).toBe(true);
    expect(messages.some((m) => m['type'] === 'result' && 'context' in m)).toBe(true);
    expect(messages.some((m) => m['type'] === 'result' && 'final-text-path' in m && m['truncated?'] === true)).toBe(true);
  });
});

describe('invalid.jsonl edge cases', () => {
  const cases = jsonLines('invalid.jsonl').map((line) => JSON.parse(line) as EdgeCase);

  it('has at least 60 cases covering every decode code and both directions', () => {
    expect(cases.length).toBeGreaterThanOrEqual(60);
    const codes = new Set(cases.map((c) => c.code));
    for (const code of ['malformed', 'too-large', 'invalid', 'version-mismatch', 'unknown-type', 'invalid-payload', null]) {
      expect(codes.has(code as RejectionCode | null), String(code)).toBe(true);
    }
    expect(new Set(cases.map((c) => c.direction))).toEqual(new Set(['event', 'control']));
  });

  const expectCarries = (rejection: Rejection, c: EdgeCase) => {
    for (const key of ['seq', 'type', 'run'] as const) {
      expect(rejection[key], `${key} of: ${c.note}`).toBe(c[key]);
      expect(Object.hasOwn(rejection, key), `${key} presence of: ${c.note}`).toBe(c[key] !== undefined);
    }
  };

  for (const c of cases) {
    const label = `${c.direction} ${c.code ?? 'accepted'}: ${c.note}`;
    it(label, () => {
      const result = decode(c.line as string, c.direction);
      if (c.code === null) {
        if (!result.ok) throw new Error(result.rejection.reason);
        const message = result.message as WireMessage;
        expect({ seq: message.seq, type: message.type, run: message.run }).toEqual({ seq: c.seq, type: c.type, run: c.run });
        const encoded = encode(message, c.direction);
        if (c.encode !== undefined) {
          expect(encoded.ok ? 'ok' : encoded.rejection.code).toBe(c.encode);
          return;
        }
        if (!encoded.ok) throw new Error(encoded.rejection.reason);
        expect(decode(encoded.line, c.direction)).toEqual({ ok: true, message });
        return;
      }
      if (result.ok) throw new Error(`accepted, expected ${c.code}`);
      const { rejection } = result;
      expect(rejection.code).toBe(c.code);
      expect(rejection.fatal).toBe(c.code === 'version-mismatch');
      expect(typeof rejection.reason).toBe('string');
      expect(rejection.reason.length).toBeGreaterThan(0);
      expectCarries(rejection, c);
      if (c.code === 'invalid' || c.code === 'invalid-payload') {
        expect(rejection.errors?.length).toBeGreaterThan(0);
      } else {
        expect(rejection.errors).toBeUndefined();
      }
    });
  }

  it('gives the same verdict through validate for every line that parses to an object', () => {
    for (const c of cases) {
      if (typeof c.line !== 'string' || c.code === 'too-large' || c.code === 'malformed') continue;
      const viaValidate = validate(JSON.parse(c.line), c.direction);
      expect(viaValidate.ok ? null : viaValidate.rejection.code, c.note).toBe(c.code);
    }
  });
});

describe('sequences.jsonl receiver cases', () => {
  const sequences = jsonLines('sequences.jsonl').map((line) => JSON.parse(line) as SequenceCase);

  it('includes a fatal line that must not consume its seq', () => {
    expect(sequences.some((s) => s.steps.some((step) => step.code === 'version-mismatch'))).toBe(true);
  });

  for (const sequence of sequences) {
    it(sequence.name, () => {
      const receiver = createReceiver(sequence.direction);
      sequence.steps.forEach((step, index) => {
        const result = receiver.receive(step.line);
        const where = `step ${index + 1}`;
        expect(result.ok ? null : result.rejection.code, where).toBe(step.code);
        expect(receiver.lastSeq, where).toBe(step.lastSeq);
        if (!result.ok && result.rejection.code === 'out-of-order') {
          expect(Object.hasOwn(result.rejection, 'seq'), where).toBe(false);
          expect(result.rejection.fatal).toBe(false);
        }
      });
    });
  }
});
