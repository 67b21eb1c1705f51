// Fen's provider refusals read as rate-limit news: which `error` texts are, and what they say.
import { describe, expect, it } from 'vitest';
import { rateLimitOfError } from '../../../../src/drivers/fen/rate-limit.js';

describe("Fen's error event as rate-limit news", () => {
  it('an HTTP 429 or 529 the provider answered is limited, the agent already gave up retrying', () => {
    expect(rateLimitOfError('HTTP 429: {"type":"error","error":{"type":"rate_limit_error"}}')).toEqual({
      status: 'limited',
      httpStatus: 429,
      agentRetries: false,
      nativeType: 'error',
      message: 'HTTP 429: {"type":"error","error":{"type":"rate_limit_error"}}',
    });
    expect(rateLimitOfError('HTTP 529: overloaded')).toMatchObject({ status: 'limited', httpStatus: 529 });
  });

  it('any other error is not: another status, a transport failure, a mention inside the text, not a string', () => {
    for (const text of ['HTTP 500: boom', 'HTTP 4290: no', 'curl: timeout', 'the tool said HTTP 429', '']) {
      expect(rateLimitOfError(text), text).toBeUndefined();
    }
    expect(rateLimitOfError(undefined)).toBeUndefined();
    expect(rateLimitOfError(429)).toBeUndefined();
  });

  it('the message is cut to 300 characters, never inside a surrogate pair', () => {
    const long = `HTTP 429: ${'😀'.repeat(400)}`;
    const message = rateLimitOfError(long)?.message ?? '';
    expect(Array.from(message)).toHaveLength(300);
    expect(long.startsWith(message)).toBe(true);
  });
});
