// Sequence numbers: the sender's stamping and counter, the receiver's ordering rules, and rejection acks.
import { describe, expect, it } from 'vitest';
import { createReceiver, createSender, decode, MAX_SEQ, rejectionAck } from '../../../src/wire/index.js';
import type { EncodeResult, Rejection } from '../../../src/wire/index.js';

const lineOf = (result: EncodeResult) => {
  if (!result.ok) throw new Error(result.rejection.reason);
  return result.line;
};

describe('createSender', () => {
  it('stamps seq 1, 2, 3 with the envelope first', () => {
    const sender = createSender('control', 'run-1');
    expect(sender.lastSeq).toBe(0);
    expect(lineOf(sender.next('prompt', { text: 'go' }))).toBe('{"v":1,"seq":1,"type":"prompt","run":"run-1","text":"go"}');
    expect(lineOf(sender.next('cancel'))).toBe('{"v":1,"seq":2,"type":"cancel","run":"run-1"}');
    expect(lineOf(sender.next('finalize', {}))).toBe('{"v":1,"seq":3,"type":"finalize","run":"run-1"}');
    expect(sender.lastSeq).toBe(3);
  });

  it('continues after startAfter', () => {
    const sender = createSender('event', 'r', 41);
    expect(lineOf(sender.next('ready'))).toBe('{"v":1,"seq":42,"type":"ready","run":"r"}');
  });

  it('lets envelope keys win over payload keys of the same name', () => {
    const sender = createSender('control', 'mine');
    const line = lineOf(
      sender.next('steer', { text: 'x', v: 2, seq: 99, type: 'prompt', run: 'theirs' } as unknown as { text: string }),
    );
    expect(line).toBe('{"v":1,"seq":1,"type":"steer","run":"mine","text":"x"}');
  });

  it('does not use up a seq when no line was produced', () => {
    const sender = createSender('control', 'r');
    const invalid = sender.next('prompt', {} as { text: string });
    expect(invalid.ok).toBe(false);
    expect(!invalid.ok && invalid.rejection).toMatchObject({ code: 'invalid-payload', seq: 1, type: 'prompt' });
    const tooLarge = sender.next('prompt', { text: '€'.repeat(22_000) });
    expect(!tooLarge.ok && tooLarge.rejection.code).toBe('too-large');
    const unknown = sender.next('pause' as 'prompt', { text: 'x' });
    expect(!unknown.ok && unknown.rejection.code).toBe('unknown-type');
    expect(sender.lastSeq).toBe(0);
    expect(lineOf(sender.next('prompt', { text: 'ok' }))).toContain('"seq":1,');
    expect(sender.lastSeq).toBe(1);
  });

  it('never throws on a hostile or non-object payload, and keeps its seq', () => {
    const sender = createSender('control', 'r');
    const payloads: unknown[] = [
      { get text(): string { throw new Error('boom'); } },
      new Proxy({}, { ownKeys: () => { throw new Error('keys'); } }),
      { text: 10n },
      'text',
      ['text'],
      42,
    ];
    for (const payload of payloads) {
      const result = sender.next('prompt', payload as { text: string });
      expect(!result.ok && result.rejection.code).toBe('invalid');
    }
    expect(sender.lastSeq).toBe(0);
  });

  it('treats a __proto__ payload key as data, never as a prototype', () => {
    const sender = createSender('event', 'r');
    const payload = JSON.parse('{"__proto__":{"polluted":true},"turn":1}') as { turn: number };
    const line = lineOf(sender.next('turn-started', payload));
    expect(line).toBe('{"v":1,"seq":1,"type":"turn-started","run":"r","__proto__":{"polluted":true},"turn":1}');
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });

  it('stops at the largest seq instead of producing an illegal one', () => {
    const sender = createSender('event', 'r', MAX_SEQ - 1);
    expect(lineOf(sender.next('ready'))).toContain(`"seq":${MAX_SEQ},`);
    const past = sender.next('ready');
    expect(!past.ok && past.rejection.code).toBe('invalid');
    expect(sender.lastSeq).toBe(MAX_SEQ);
  });

  it('rejects a run id that is not a string without throwing', () => {
    const sender = createSender('control', 5 as unknown as string);
    const result = sender.next('cancel');
    expect(!result.ok && result.rejection.code).toBe('invalid');
  });
});

describe('createReceiver', () => {
  it('accepts what a sender produced, in order', () => {
    const sender = createSender('event', 'r');
    const receiver = createReceiver('event');
    const lines = [
      sender.next('ready'),
      sender.next('control-ack', { ref: 1, status: 'accepted' }),
      sender.next('turn-started', { turn: 1 }),
    ].map(lineOf);
    for (const line of lines) expect(receiver.receive(line).ok).toBe(true);
    expect(receiver.lastSeq).toBe(3);
    const replay = receiver.receive(lines[1]!);
    expect(!replay.ok && replay.rejection).toEqual({
      code: 'out-of-order',
      reason: 'seq 2 does not follow 3',
      fatal: false,
      type: 'control-ack',
      run: 'r',
    });
  });

  it('consumes a rejected line with a readable seq, but not a fatal one', () => {
    const receiver = createReceiver('control');
    expect(receiver.receive('{"v":1,"seq":4,"type":"prompt","run":"r"}').ok).toBe(false);
    expect(receiver.lastSeq).toBe(4);
    const fatal = receiver.receive('{"v":3,"seq":9,"type":"prompt","run":"r","text":"x"}');
    expect(!fatal.ok && fatal.rejection).toMatchObject({ code: 'version-mismatch', fatal: true, seq: 9 });
    expect(receiver.lastSeq).toBe(4);
  });

  it('keeps receivers independent', () => {
    const a = createReceiver('event');
    const b = createReceiver('event');
    a.receive('{"v":1,"seq":5,"type":"ready","run":"r"}');
    expect(b.receive('{"v":1,"seq":1,"type":"ready","run":"r"}').ok).toBe(true);
    expect([a.lastSeq, b.lastSeq]).toEqual([5, 1]);
  });
});

describe('rejectionAck', () => {
  it('answers with the rejected line seq as ref', () => {
    const decoded = decode('{"v":1,"seq":7,"type":"prompt","run":"r"}', 'control');
    const rejection = (decoded as { rejection: Rejection }).rejection;
    expect(rejectionAck(rejection)).toEqual({ status: 'rejected', reason: rejection.reason, ref: 7 });
  });

  it('omits ref when the line had no usable seq, including out-of-order lines', () => {
    const malformed = (decode('{', 'control') as { rejection: Rejection }).rejection;
    expect(rejectionAck(malformed)).toEqual({ status: 'rejected', reason: malformed.reason });
    expect(Object.hasOwn(rejectionAck(malformed), 'ref')).toBe(false);
    const receiver = createReceiver('control');
    receiver.receive('{"v":1,"seq":2,"type":"cancel","run":"r"}');
    const late = receiver.receive('{"v":1,"seq":1,"type":"cancel","run":"r"}');
    const ack = rejectionAck((late as { rejection: Rejection }).rejection);
    expect(Object.hasOwn(ack, 'ref')).toBe(false);
  });

  it('is a payload a child sender can send as a valid control-ack', () => {
    const child = createSender('event', 'r');
    const parent = createReceiver('event');
    for (const raw of ['{"v":1,"seq":3,"type":"steer","run":"r"}', 'not json']) {
      const rejection = (decode(raw, 'control') as { rejection: Rejection }).rejection;
      const line = lineOf(child.next('control-ack', rejectionAck(rejection)));
      const received = parent.receive(line);
      expect(received.ok && received.message.type).toBe('control-ack');
    }
  });
});
