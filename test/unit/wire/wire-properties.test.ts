// Property tests (fast-check, 1000+ runs each): decode never throws, encode/decode round-trips, receiver ordering.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createReceiver, decode, encode, isSeq, validate } from '../../../src/wire/index.js';
import { CONTROL_SCHEMAS, EVENT_SCHEMAS, interpretedCheckers } from '../../../src/wire/schema.js';
import type { DecodeResult, Direction, RejectionCode } from '../../../src/wire/index.js';

const RUNS = { numRuns: 1000 };
const CODES: RejectionCode[] = ['malformed', 'too-large', 'invalid', 'version-mismatch', 'unknown-type', 'invalid-payload'];
const DIRECTIONS: Direction[] = ['event', 'control'];

/** The shape every decode result must have, whatever the input. */
function expectWellFormed(result: DecodeResult<unknown>): void {
  if (result.ok) {
    expect(typeof result.message).toBe('object');
    return;
  }
  const { rejection } = result;
  expect(CODES).toContain(rejection.code);
  expect(typeof rejection.reason).toBe('string');
  expect(rejection.fatal).toBe(rejection.code === 'version-mismatch');
  if (rejection.seq !== undefined) expect(isSeq(rejection.seq)).toBe(true);
}

const decodesSafely = (line: string) => {
  for (const direction of DIRECTIONS) expectWellFormed(decode(line, direction));
};

describe('decode never throws', () => {
  it('on arbitrary strings (full Unicode, lone surrogates included)', () => {
    fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 200 }), decodesSafely), RUNS);
  });

  it('on arbitrary ASCII strings', () => {
    fc.assert(fc.property(fc.string({ maxLength: 200 }), decodesSafely), RUNS);
  });

  it('on arbitrary JSON values, stringified', () => {
    fc.assert(fc.property(fc.jsonValue(), (value) => decodesSafely(JSON.stringify(value))), RUNS);
  });

  it('on arbitrary bytes decoded as UTF-8', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => decodesSafely(Buffer.from(bytes).toString('utf8'))),
      RUNS,
    );
  });

  it('on JSON text built from wire-like fragments', () => {
    const fragment = fc.constantFrom('{', '}', '[', ']', ',', ':', '"v"', '"seq"', '"type"', '"run"', '1', '1.0', '1e400', 'null', '"ready"', '"prompt"', ' ', '"\\ud800"');
    fc.assert(fc.property(fc.array(fragment, { maxLength: 40 }), (parts) => decodesSafely(parts.join(''))), RUNS);
  });
});

// Values of the right JSON types, for building valid messages.
const text = fc.string({ unit: 'binary', maxLength: 40 });
const bool = fc.boolean();
const positive = fc.oneof(fc.integer({ min: 1, max: 1000 }), fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }));
const integer = fc.oneof(fc.integer({ min: -1000, max: 1000 }), fc.maxSafeInteger());
const finite = fc.double({ noNaN: true, noDefaultInfinity: true }).map((x) => (x === 0 ? 0 : x));
/** Any JSON value as JSON itself would give it back (no -0). */
const json = fc.jsonValue({ maxDepth: 3 }).map((value) => JSON.parse(JSON.stringify(value)) as unknown);
const object = fc.dictionary(fc.string({ maxLength: 8 }), json, { maxKeys: 4 });
const oneOf = (...values: string[]) => fc.constantFrom(...values);

type Fields = Record<string, fc.Arbitrary<unknown>>;
interface TypeModel {
  required?: Fields;
  optional?: Fields;
  display?: boolean;
}

const DISPLAY: Fields = {
  timestamp: text,
  summary: text,
  'transport-truncated?': bool,
  'run-id': text,
  agent: text,
  'requested-cwd': text,
  cwd: text,
  'physical-cwd': text,
};

const textBlock: TypeModel = { required: { 'final?': bool }, optional: { 'content-index': integer, text }, display: true };
const delta: TypeModel = { optional: { 'content-index': integer, delta: text }, display: true };
const injected: TypeModel = { optional: { text, ref: positive }, display: true };

/** Every event type with its fields, written from the facts file independently of src/wire/schema.ts. */
const EVENTS: Record<string, TypeModel> = {
  'agent-started': { optional: { provider: text, model: text }, display: true },
  user: { optional: { text }, display: true },
  'llm-start': { optional: { provider: text, model: text }, display: true },
  'llm-end': { optional: { 'stop-reason': text, usage: object }, display: true },
  'assistant-text': textBlock,
  'assistant-text-delta': delta,
  'assistant-thinking': textBlock,
  'assistant-thinking-delta': delta,
  'assistant-stream-end': { required: { 'final?': bool }, display: true },
  'tool-call': { required: { name: text }, optional: { id: text, arguments: json }, display: true },
  'tool-result': {
    required: { name: text, 'is-error?': bool },
    optional: { id: text, 'tool-call-id': text, 'duration-seconds': finite, result: json },
    display: true,
  },
  'steering-injected': injected,
  'follow-up-injected': injected,
  'agent-turn-complete': { optional: { status: text, error: text }, display: true },
  error: { optional: { error: text, source: text }, display: true },
  info: { optional: { refs: fc.array(positive, { maxLength: 5 }) }, display: true },
  ready: {},
  'turn-started': { required: { turn: positive } },
  'turn-complete': { required: { turn: positive, 'stop-reason': text }, optional: { usage: object } },
  result: {
    required: { 'stop-reason': text },
    optional: {
      'final-text': text,
      usage: object,
      'truncated?': bool,
      'final-text-path': text,
      context: oneOf('complete', 'partial'),
    },
  },
  exit: { required: { status: oneOf('done', 'cancelled', 'failed', 'timed-out') }, optional: { error: text } },
};

const CONTROLS: Record<string, TypeModel> = {
  prompt: { required: { text } },
  steer: { required: { text } },
  'follow-up': { required: { text } },
  finalize: { optional: { note: text } },
  cancel: {},
  close: {},
};

/** Unknown extra fields, named so they can never collide with a known one. */
const extras = fc.dictionary(fc.string({ maxLength: 8 }).map((key) => `x-${key}`), json, { maxKeys: 3 });

function messageOf(type: string, model: TypeModel): fc.Arbitrary<Record<string, unknown>> {
  const payload = fc.record({ ...model.required, ...model.optional }, { requiredKeys: Object.keys(model.required ?? {}) });
  const display = model.display ? fc.record(DISPLAY, { requiredKeys: [] }) : fc.constant({});
  const envelope = fc.record({ v: fc.constant(1), seq: positive, type: fc.constant(type), run: text });
  return fc
    .tuple(envelope, payload, display, extras)
    .map(([env, fields, shown, extra]) => ({ ...env, ...fields, ...shown, ...extra }));
}

/** control-ack needs a ref unless it is rejected. */
const controlAck = fc.oneof(
  fc.record(
    { v: fc.constant(1), seq: positive, type: fc.constant('control-ack'), run: text, status: oneOf('accepted', 'applied'), ref: positive, reason: text },
    { requiredKeys: ['v', 'seq', 'type', 'run', 'status', 'ref'] },
  ),
  fc.record(
    { v: fc.constant(1), seq: positive, type: fc.constant('control-ack'), run: text, status: fc.constant('rejected'), ref: positive, reason: text },
    { requiredKeys: ['v', 'seq', 'type', 'run', 'status'] },
  ),
);

describe('encode then decode is the identity on valid messages', () => {
  const roundTrips = (direction: Direction) => (message: Record<string, unknown>) => {
    const encoded = encode(message, direction);
    if (!encoded.ok) throw new Error(`${encoded.rejection.code}: ${encoded.rejection.reason}`);
    expect(decode(encoded.line, direction)).toEqual({ ok: true, message });
  };

  for (const [type, model] of Object.entries(EVENTS)) {
    it(`event ${type}`, () => {
      fc.assert(fc.property(messageOf(type, model), roundTrips('event')), RUNS);
    });
  }
  it('event control-ack', () => {
    fc.assert(fc.property(controlAck, roundTrips('event')), RUNS);
  });
  for (const [type, model] of Object.entries(CONTROLS)) {
    it(`control ${type}`, () => {
      fc.assert(fc.property(messageOf(type, model), roundTrips('control')), RUNS);
    });
  }
});

describe('decode agrees with the ordered checks on near-valid messages', () => {
  const ENVELOPE = ['v', 'seq', 'type', 'run'];
  const KNOWN_KEYS = [
    ...new Set([
      ...ENVELOPE,
      ...Object.values({ ...EVENTS, ...CONTROLS }).flatMap((m) => [...Object.keys(m.required ?? {}), ...Object.keys(m.optional ?? {})]),
      ...Object.keys(DISPLAY),
      'ref',
      'status',
      'reason',
    ]),
  ];
  const loose = fc.oneof(
    json,
    text,
    bool,
    positive,
    integer,
    oneOf('accepted', 'rejected', 'applied', 'done', 'complete', 'ready', 'prompt'),
    fc.constantFrom(null, 0, -1, 1.5, 2 ** 53, 2),
  );
  const valid = fc.oneof(
    ...Object.entries(EVENTS).map(([type, model]) => messageOf(type, model)),
    controlAck,
    ...Object.entries(CONTROLS).map(([type, model]) => messageOf(type, model)),
  );
  /** A valid message with up to three keys dropped or set to loosely typed values. */
  const nearValid = fc
    .tuple(
      valid,
      fc.array(fc.record({ drop: fc.boolean(), key: fc.constantFrom(...KNOWN_KEYS), value: loose }), { maxLength: 3 }),
    )
    .map(([message, edits]) => {
      const edited: Record<string, unknown> = { ...message };
      for (const { drop, key, value } of edits) {
        if (drop) delete edited[key];
        else edited[key] = value;
      }
      return edited;
    });

  it('gives the same verdict as validate, carries exactly the usable envelope fields, and re-encodes what it accepts', () => {
    fc.assert(
      fc.property(nearValid, fc.constantFrom(...DIRECTIONS), (value, direction) => {
        const line = JSON.stringify(value);
        const parsed = JSON.parse(line) as Record<string, unknown>;
        const decoded = decode(line, direction);
        const checked = validate(parsed, direction);
        expect(decoded.ok ? 'ok' : decoded.rejection.code).toBe(checked.ok ? 'ok' : checked.rejection.code);
        if (decoded.ok) {
          const encoded = encode(decoded.message, direction);
          expect(encoded.ok && decode(encoded.line, direction)).toEqual({ ok: true, message: parsed });
          return;
        }
        const { rejection } = decoded;
        expect(rejection.seq).toBe(isSeq(parsed['seq']) ? parsed['seq'] : undefined);
        expect(rejection.type).toBe(typeof parsed['type'] === 'string' ? parsed['type'] : undefined);
        expect(rejection.run).toBe(typeof parsed['run'] === 'string' ? parsed['run'] : undefined);
      }),
      { numRuns: 10_000 },
    );
  });

  it('gets the same answers from the interpreted checkers as from the compiled ones', () => {
    const specs = [...EVENT_SCHEMAS.values(), ...CONTROL_SCHEMAS.values()];
    const interpreted = specs.map((spec) => interpretedCheckers(spec.fields, spec.refUnlessRejected));
    fc.assert(
      fc.property(nearValid, (value) => {
        const parsed = JSON.parse(JSON.stringify(value)) as Record<string, unknown>;
        specs.forEach((spec, i) => {
          expect(interpreted[i]!.errors(parsed)).toEqual(spec.errors(parsed));
          expect(interpreted[i]!.accepts(parsed)).toBe(spec.accepts(parsed));
        });
      }),
      RUNS,
    );
  });
});

describe('a receiver', () => {
  type Kind = 'valid' | 'fatal' | 'bad-payload' | 'malformed' | 'no-seq';
  const step = fc.record({
    kind: fc.constantFrom<Kind>('valid', 'valid', 'fatal', 'bad-payload', 'malformed', 'no-seq'),
    seq: fc.integer({ min: 1, max: 30 }),
  });
  const lineOf = ({ kind, seq }: { kind: Kind; seq: number }) => {
    switch (kind) {
      case 'valid':
        return `{"v":1,"seq":${seq},"type":"steer","run":"r","text":"t"}`;
      case 'fatal':
        return `{"v":2,"seq":${seq},"type":"steer","run":"r","text":"t"}`;
      case 'bad-payload':
        return `{"v":1,"seq":${seq},"type":"steer","run":"r"}`;
      case 'malformed':
        return `{"v":1,"seq":${seq},`;
      case 'no-seq':
        return `{"v":1,"seq":0,"type":"steer","run":"r","text":"t"}`;
    }
  };

  it('never accepts a non-increasing seq and never consumes a fatal line', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), (steps) => {
        const receiver = createReceiver('control');
        let consumed = 0;
        let highestAccepted = 0;
        for (const s of steps) {
          const before = receiver.lastSeq;
          const result = receiver.receive(lineOf(s));
          if (result.ok) {
            expect(result.message.seq).toBeGreaterThan(highestAccepted);
            expect(result.message.seq).toBeGreaterThan(before);
            highestAccepted = result.message.seq;
          }
          let expected: string;
          if (s.kind === 'fatal') expected = 'version-mismatch';
          else if (s.kind === 'malformed') expected = 'malformed';
          else if (s.kind === 'no-seq') expected = 'invalid';
          else if (s.seq <= consumed) expected = 'out-of-order';
          else {
            expected = s.kind === 'valid' ? 'ok' : 'invalid-payload';
            consumed = s.seq;
          }
          expect(result.ok ? 'ok' : result.rejection.code).toBe(expected);
          expect(receiver.lastSeq).toBe(consumed);
          if (s.kind === 'fatal') expect(receiver.lastSeq).toBe(before);
        }
      }),
      RUNS,
    );
  });
});
