// Unit tests of fuseraft line reading and frame mapping: noise, field checks, pass-through, tool output cap.
import { describe, expect, it } from 'vitest';
import { displayDraft, usageOf } from '../../../../src/drivers/fuseraft/event-drafts.js';
import { passthrough, withExtras } from '../../../../src/drivers/shared/event-drafts.js';
import { readLine, TOOL_OUTPUT_CAP } from '../../../../src/drivers/fuseraft/frames.js';
import { overlongRejection } from '../../../../src/drivers/shared/json-line.js';
import type { Frame } from '../../../../src/drivers/fuseraft/frames.js';

describe('readLine', () => {
  it('reads a frame and leaves it whole', () => {
    const read = readLine('{"type":"token","text":"hi","extra":{"a":1}}', 1);
    expect(read).toEqual({ frame: { type: 'token', text: 'hi', extra: { a: 1 } }, usable: true });
  });

  it('reports plain-text noise and empty lines as malformed, without repeating the text', () => {
    const noise = readLine('Model switched to gpt-x (secret-ish text)', 7);
    expect(noise.frame).toBeUndefined();
    expect(noise.rejection).toEqual({ code: 'malformed', reason: 'stdout line 7 is not JSON (41 characters)' });
    expect(readLine('', 8).rejection?.reason).toBe('stdout line 8 is empty');
  });

  it('rejects JSON that is not an object with a string type', () => {
    for (const line of ['[1,2]', '"ready"', 'null', '{"type":3}', '{"text":"x"}']) {
      expect(readLine(line, 1).rejection?.code, line).toBe('invalid');
    }
  });

  it('strips a trailing carriage return', () => {
    expect(readLine('{"type":"cancelled"}\r', 1).usable).toBe(true);
  });

  it('marks a frame unusable when a required field is wrong, and removes the wrong field', () => {
    const read = readLine('{"type":"token","text":42}', 3);
    expect(read.usable).toBe(false);
    expect(read.frame).toEqual({ type: 'token' });
    expect(read.rejection).toMatchObject({ code: 'invalid-payload', lineType: 'token', errors: ['text must be a string'] });
  });

  it('keeps a frame usable when only optional fields are wrong, dropping them', () => {
    const read = readLine('{"type":"message_end","turnIndex":"x","inputTokens":10,"outputTokens":null}', 1);
    expect(read.usable).toBe(true);
    expect(read.frame).toEqual({ type: 'message_end', inputTokens: 10, outputTokens: null });
    expect(read.rejection?.errors).toEqual(['turnIndex must be an integer']);
  });

  it('checks enumerations and nested AgentMessage fields', () => {
    expect(readLine('{"type":"interjection","status":"maybe"}', 1).rejection?.errors).toEqual([
      'status must be one of joined, carried, dropped',
    ]);
    const bad = readLine('{"type":"agent_message","message":{"agentName":"A"}}', 1);
    expect(bad.usable).toBe(false);
    expect(bad.rejection?.errors).toEqual(['message.content is missing']);
  });

  it('passes unknown types through untouched and accepts nulls where documented', () => {
    expect(readLine('{"type":"hologram","x":1}', 1)).toEqual({ frame: { type: 'hologram', x: 1 }, usable: true });
    expect(readLine('{"type":"turn_start","text":null}', 1).usable).toBe(true);
  });

  it('keeps a __proto__ key as data', () => {
    const read = readLine('{"type":"status","__proto__":{"polluted":true}}', 1);
    const draft = passthrough(read.frame!);
    expect(Object.getPrototypeOf(draft)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
    expect(Object.getPrototypeOf(draft.extra)).toBe(Object.prototype);
    expect(Object.hasOwn(draft.extra!, '__proto__')).toBe(true);
  });
});

describe('an overlong line (the shared overlongRejection)', () => {
  it('sniffs the type of an overlong frame from its first bytes', () => {
    expect(overlongRejection('{"type":"approval_request","kind":"file_write","newContent":"aaaa', 'stdout line 4', 1024)).toEqual({
      code: 'too-large',
      reason: 'stdout line 4 is longer than the 1024-byte line bound (maxFrameBytes); skipped',
      lineType: 'approval_request',
    });
    expect(overlongRejection('{"kind":"x","type":"approval_request"', 'stdout line 4', 1024).lineType).toBeUndefined();
  });
});

describe('frame mapping', () => {
  const frame = (value: object) => value as Frame;

  it('maps tokens, thinking, tool calls and results to the Fen event shapes', () => {
    expect(displayDraft(frame({ type: 'token', text: 'a' }))).toEqual({ type: 'assistant-text-delta', delta: 'a' });
    expect(displayDraft(frame({ type: 'thinking', text: 't' }))).toEqual({ type: 'assistant-thinking-delta', delta: 't' });
    expect(displayDraft(frame({ type: 'tool_call', id: 'c1', name: 'shell', summary: 'ls', args: { cmd: 'ls' }, agent: null }))).toEqual({
      type: 'tool-call',
      name: 'shell',
      id: 'c1',
      summary: 'ls',
      arguments: { cmd: 'ls' },
    });
    expect(displayDraft(frame({ type: 'tool_result', id: 'c1', name: 'shell', ok: false, output: 'boom' }))).toEqual({
      type: 'tool-result',
      name: 'shell',
      isError: true,
      id: 'c1',
      toolCallId: 'c1',
      result: 'boom',
    });
  });

  it('marks tool output at fuseraft\'s cap as truncated, and only then', () => {
    const at = displayDraft(frame({ type: 'tool_result', name: 'r', ok: true, output: 'x'.repeat(TOOL_OUTPUT_CAP) }));
    const below = displayDraft(frame({ type: 'tool_result', name: 'r', ok: true, output: 'x'.repeat(TOOL_OUTPUT_CAP - 1) }));
    expect(at).toMatchObject({ type: 'tool-result', transportTruncated: true });
    expect(below).not.toHaveProperty('transportTruncated');
  });

  it('surfaces retrying as info with the attempt', () => {
    expect(displayDraft(frame({ type: 'retrying', attempt: 2, max: 5 }))).toEqual({
      type: 'info',
      nativeType: 'retrying',
      summary: 'the model stream dropped; retrying (attempt 2 of 5)',
      extra: { attempt: 2, max: 5 },
    });
  });

  it('passes other frames through as info, with their fields, text as summary', () => {
    expect(passthrough(frame({ type: 'warning', text: 'careful', level: 2 }))).toEqual({
      type: 'info',
      nativeType: 'warning',
      summary: 'careful',
      extra: { text: 'careful', level: 2 },
    });
    expect(passthrough(frame({ type: 'file_changed', path: 'a.ts', added: 1 }))).toEqual({
      type: 'info',
      nativeType: 'file_changed',
      extra: { path: 'a.ts', added: 1 },
    });
  });

  it('keeps unknown fields under extra, as sent, never over the envelope or mapped keys', () => {
    const draft = withExtras({ type: 'assistant-text-delta', delta: 'a' }, frame({ type: 'token', text: 'a', seq: 9, run: 'x', delta: 'b', mood: 'ok', extra: 1 }), ['text']);
    expect(draft).toEqual({ type: 'assistant-text-delta', delta: 'a', extra: { seq: 9, run: 'x', delta: 'b', mood: 'ok', extra: 1 } });
    expect(withExtras({ type: 'ready' }, frame({ type: 'ready' }), [])).toEqual({ type: 'ready' });
  });

  it('reads usage counts that are present and not null', () => {
    expect(usageOf({ inputTokens: 10, outputTokens: null, cachedInputTokens: 4, other: 1 })).toEqual({ inputTokens: 10, cacheReadTokens: 4 });
    expect(usageOf({ inputTokens: null })).toBeUndefined();
  });
});
