// HEP v1 frame parsing, the header check and field checks, as pure functions (no process).
import { describe, expect, it } from 'vitest';
import { addExtras, frameErrors, headerProblem, isBounded, isKnownFrame } from '../../../../src/drivers/hep/frames.js';
import { decodeTypedFrame } from '../../../../src/drivers/shared/json-line.js';
import type { HepFrame } from '../../../../src/drivers/hep/frames.js';
import type { RunEventDraftOf } from '../../../../src/api/types.js';

describe('HEP frames', () => {
  it('parses a frame (the shared decoder), and says why a line is not one', () => {
    expect(decodeTypedFrame('{"type":"agent_start","turn_id":1}', 'stdout line 2')).toEqual({ value: { type: 'agent_start', turn_id: 1 } });
    expect(decodeTypedFrame('this is not json {', 'stdout line 2').rejection).toMatchObject({ code: 'malformed' });
    expect(decodeTypedFrame('[1,2,3]', 'stdout line 2').rejection).toMatchObject({ code: 'invalid' });
    expect(decodeTypedFrame('{"type":7}', 'stdout line 2').rejection).toMatchObject({ code: 'invalid' });
    expect(decodeTypedFrame('null', 'stdout line 2').rejection).toMatchObject({ code: 'invalid' });
  });

  it('accepts v1 headers (minor versions too) and refuses prose and other majors', () => {
    expect(headerProblem('{"type":"hep_header","hep":"v1","fah":"1.2.3","session":"s"}')).toBeUndefined();
    expect(headerProblem('{"type":"hep_header","hep":"v1.4"}')).toBeUndefined();
    expect(headerProblem('{"type":"hep_header","hep":"v2"}')).toMatchObject({ code: 'version-mismatch' });
    expect(headerProblem('{"type":"hep_header","hep":"v10"}')).toMatchObject({ code: 'version-mismatch' });
    expect(headerProblem('{"type":"hep_header"}')).toMatchObject({ code: 'version-mismatch' });
    expect(headerProblem('I will read the README first.')?.reason).toContain('--output events');
    expect(headerProblem('{"type":"agent_start","turn_id":1}')).toMatchObject({ code: 'not-header' });
  });

  it('checks the required fields of known frames, and knows which types it maps', () => {
    const frame = (value: object) => value as HepFrame;
    expect(frameErrors(frame({ type: 'message_delta', turn_id: 1, delta: 'hi' }))).toEqual([]);
    expect(frameErrors(frame({ type: 'message_delta', turn_id: '1', delta: 3 }))).toEqual([
      'message_delta.turn_id must be an integer >= 0',
      'message_delta.delta must be a string',
    ]);
    expect(frameErrors(frame({ type: 'turn_done', turn_id: 2, message: '', tool_results: [], stop_reason: 'stop', usage: 5 }))).toEqual([
      'turn_done.usage must be an object',
    ]);
    expect(isKnownFrame('turn_done')).toBe(true);
    expect(isKnownFrame('mystery_frame')).toBe(false);
    expect(isKnownFrame('hasOwnProperty')).toBe(false);
  });

  it('recognises Fa bound suffix', () => {
    expect(isBounded('abc…(+4000 chars)')).toBe(true);
    expect(isBounded('abc...')).toBe(false);
    expect(isBounded(undefined)).toBe(false);
  });

  it('keeps unknown fields camelCased under extra, none lost, never as the prototype', () => {
    const frame = JSON.parse('{"type":"message_delta","turn_id":1,"delta":"x","x_score":0.5,"seq":9,"run":"other","extra":{"a":1},"a_b":1,"aB":2,"_private":3,"__proto__":{"evil":true}}') as HepFrame;
    const draft: RunEventDraftOf<'assistant-text-delta'> = { type: 'assistant-text-delta' };
    const { extra } = addExtras(draft, frame, ['turn_id', 'delta']);
    // A snake_case key whose camelCase name the frame also has as such keeps its own spelling.
    // Leading underscores are not word breaks: `_private` and `__proto__` keep their spelling.
    expect(Object.keys(extra!)).toEqual(['xScore', 'seq', 'run', 'extra', 'a_b', 'aB', '_private', '__proto__']);
    expect(extra).toMatchObject({ xScore: 0.5, seq: 9, run: 'other', extra: { a: 1 }, a_b: 1, aB: 2, _private: 3 });
    expect(Object.getOwnPropertyDescriptor(extra, '__proto__')?.value).toEqual({ evil: true });
    expect(Object.getPrototypeOf(extra)).toBe(Object.prototype);
    expect(addExtras({ type: 'assistant-text-delta' }, frame, Object.keys(frame))).toEqual({ type: 'assistant-text-delta' });
  });
});
