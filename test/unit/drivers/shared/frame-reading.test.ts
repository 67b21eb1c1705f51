// Unit tests of the shared frame reading: the JSON-line decoder, the field rules, the rejected-event builder, the envelope and the usage reader.
import { describe, expect, it } from 'vitest';
import { EventStamper } from '../../../../src/drivers/shared/envelope.js';
import { checkTable, compileTable, fieldRejection, FieldRules, optional, required } from '../../../../src/drivers/shared/field-rules.js';
import { decodeJsonObject, decodeTypedFrame, overlongRejection } from '../../../../src/drivers/shared/json-line.js';
import { rejectedEvent } from '../../../../src/drivers/shared/rejected.js';
import { readUsage } from '../../../../src/drivers/shared/usage-reader.js';
import type { JsonObject } from '../../../../src/wire/index.js';

describe('decodeJsonObject / decodeTypedFrame', () => {
  it('decodes an object, strips a trailing \\r, and never repeats the text in a reason', () => {
    expect(decodeJsonObject('{"a":1}\r', 'stdout line 1')).toEqual({ value: { a: 1 } });
    expect(decodeJsonObject('secret token sk-123 here', 'stdout line 2').rejection).toEqual({ code: 'malformed', reason: 'stdout line 2 is not JSON (24 characters)' });
    expect(decodeJsonObject('  ', 'message 3 from the daemon').rejection).toEqual({ code: 'malformed', reason: 'message 3 from the daemon is empty' });
    for (const text of ['[1,2]', 'null', '"x"', '7']) expect(decodeJsonObject(text, 'line').rejection?.code).toBe('invalid');
  });

  it('a typed frame needs a string type', () => {
    expect(decodeTypedFrame('{"type":"token","text":"hi"}', 'l').value).toEqual({ type: 'token', text: 'hi' });
    expect(decodeTypedFrame('{"type":7}', 'stdout line 4').rejection).toEqual({ code: 'invalid', reason: 'stdout line 4 is JSON but not an object with a string type' });
    expect(decodeTypedFrame('{"id":1}', 'l').rejection?.code).toBe('invalid');
  });

  it('an overlong line: skipped or not, its type sniffed only when the line starts with it', () => {
    expect(overlongRejection('{"type":"approval_request","kind":"x', 'stdout line 5', 1024)).toEqual({
      code: 'too-large',
      reason: 'stdout line 5 is longer than the 1024-byte line bound (maxFrameBytes); skipped',
      lineType: 'approval_request',
    });
    expect(overlongRejection('{"text":"{\\"type\\":\\"x\\"}"', 'm', 8, false)).toEqual({ code: 'too-large', reason: 'm is larger than the 8-byte bound (maxFrameBytes)' });
  });
});

describe('field rules', () => {
  const rules = new FieldRules(
    {
      token: { text: required('string') },
      message_end: { turnIndex: optional('integer'), status: optional('string', { oneOf: ['a', 'b'] }), usage: optional('object', { essential: true }) },
      turn: { turn_id: required('natural'), version: required('any') },
    },
    (type) => (type === 'turn' ? 'turn.' : ''),
  );

  it('passes good frames untouched, and types without rules', () => {
    const frame: JsonObject = { type: 'token', text: 'hi', other: 5 };
    expect(rules.check(frame, 'token')).toEqual({ errors: undefined, usable: true });
    expect(frame).toEqual({ type: 'token', text: 'hi', other: 5 });
    expect(rules.check({ type: 'x' }, 'x')).toEqual({ errors: undefined, usable: true });
    expect(rules.has('token')).toBe(true);
    expect(rules.has('hasOwnProperty')).toBe(false);
  });

  it('removes what fails, says why, and marks the frame unusable when a required or essential field failed', () => {
    const bad: JsonObject = { type: 'message_end', turnIndex: 1.5, status: 'c' };
    expect(rules.check(bad, 'message_end')).toEqual({ errors: ['turnIndex must be an integer', 'status must be one of a, b'], usable: true });
    expect(bad).toEqual({ type: 'message_end' });
    expect(rules.check({ usage: 5 }, 'message_end')).toEqual({ errors: ['usage must be an object'], usable: false });
    expect(rules.check({ turnIndex: null, usage: null }, 'message_end')).toEqual({ errors: undefined, usable: true });
    expect(rules.check({}, 'token')).toEqual({ errors: ['text is missing'], usable: false });
    expect(rules.check({ text: null }, 'token')).toEqual({ errors: ['text must be a string'], usable: false });
    expect(rules.check({ turn_id: -1, version: null }, 'turn')).toEqual({ errors: ['turn.turn_id must be an integer >= 0'], usable: false });
  });

  it('accumulates over a frame and its nested objects', () => {
    const check = checkTable({ a: 'x' }, compileTable({ a: required('number') }, 'outer.'));
    checkTable({ b: 1 }, compileTable({ b: optional('string') }, 'outer.inner.'), check);
    expect(check).toEqual({ errors: ['outer.a must be a number', 'outer.inner.b must be a string'], usable: false });
    expect(fieldRejection('message 7', 'tool_end', ['tool_end.success must be a boolean'])).toEqual({
      code: 'invalid-payload',
      reason: 'message 7 (tool_end): tool_end.success must be a boolean',
      lineType: 'tool_end',
      errors: ['tool_end.success must be a boolean'],
    });
  });
});

describe('rejected events, the envelope, usage', () => {
  it('builds rejected events with what the rejection knows', () => {
    expect(rejectedEvent({ code: 'malformed', reason: 'r' }, false)).toEqual({ type: 'rejected', code: 'malformed', reason: 'r', fatal: false });
    expect(rejectedEvent({ code: 'invalid-payload', reason: 'r', lineType: 't', errors: ['e'] }, true, 4)).toEqual({
      type: 'rejected', code: 'invalid-payload', reason: 'r', fatal: true, seq: 4, lineType: 't', errors: ['e'],
    });
  });

  it('stamps drafts in place: counted, or at the peer\'s own seq', () => {
    const stamper = new EventStamper('run-1');
    const draft = { type: 'info' as const, summary: 's' };
    const event = stamper.next(draft);
    expect(event).toBe(draft);
    expect(event).toEqual({ type: 'info', summary: 's', v: 1, seq: 1, run: 'run-1' });
    expect(stamper.next({ type: 'info' })).toMatchObject({ seq: 2 });
    expect(stamper.at({ type: 'info' }, 40)).toMatchObject({ seq: 40, run: 'run-1' });
  });

  it('reads usage objects, count members and costs, wherever a protocol puts them', () => {
    expect(readUsage({ usage: { input: 3, output: 4 } }, { object: 'usage' })).toEqual({ inputTokens: 3, outputTokens: 4 });
    expect(readUsage({ usage: { input: 3 }, cost: 0.25 }, { object: 'usage', cost: 'cost' })).toEqual({ inputTokens: 3, costUsd: 0.25 });
    expect(readUsage({ cost: 0.5 }, { object: 'usage', cost: 'cost' })).toEqual({ costUsd: 0.5 });
    expect(readUsage({ inputTokens: 5, outputTokens: null, cachedInputTokens: 2 }, { counts: ['inputTokens', 'outputTokens', 'cachedInputTokens'] })).toEqual({ inputTokens: 5, cacheReadTokens: 2 });
    expect(readUsage({ outputTokens: -1 }, { counts: ['outputTokens'] })).toBeUndefined();
    expect(readUsage({ tokenUsage: { last: { inputTokens: 9 } } }, { object: ['tokenUsage', 'last'] })).toEqual({ inputTokens: 9 });
    expect(readUsage({ usage: 'lots', cost: 'free' }, { object: 'usage', cost: 'cost' })).toBeUndefined();
  });
});
