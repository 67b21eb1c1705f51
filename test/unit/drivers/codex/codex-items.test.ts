// Unit tests of Codex's tool items as tool-call and tool-result (MCP, web search, file changes, an item announced only at its end) and of the error text read out of a provider's body.
import { describe, expect, it } from 'vitest';
import { errorMessageOf } from '../../../../src/drivers/codex/messages.js';
import { accountRateLimit, errorRateLimit } from '../../../../src/drivers/codex/rate-limits.js';
import { codexHarness, handshake, itemParams, turnAnswer } from '../../../helpers/codex-session.js';

function running() {
  const h = codexHarness();
  handshake(h);
  h.line(turnAnswer(3));
  return h;
}

describe('Codex tool items', () => {
  it('maps an MCP call, a web search and a patch: names, arguments, results, errors', () => {
    const h = running();
    const mcp = { type: 'mcpToolCall', id: 'm1', server: 'docs', tool: 'search', status: 'inProgress', arguments: { q: 'x' }, result: null, error: null, durationMs: null };
    h.notify('item/started', itemParams(mcp));
    h.notify('item/completed', itemParams({ ...mcp, status: 'failed', error: { message: 'server gone' }, durationMs: 12 }));
    h.notify('item/started', itemParams({ type: 'webSearch', id: 'w1', query: 'subvisor', action: null, results: null }));
    h.notify('item/completed', itemParams({ type: 'webSearch', id: 'w1', query: 'subvisor', action: { type: 'search', query: 'subvisor', queries: null }, results: [{ url: 'u' }] }));
    // A patch announced only when it completes still gets its call first.
    h.notify('item/completed', itemParams({ type: 'fileChange', id: 'p1', changes: [{ path: '/w/a.txt', kind: { type: 'add' }, diff: '+x' }], status: 'completed' }));
    expect(h.ofType('tool-call').map((event) => [event.name, event.id, event.arguments])).toEqual([
      ['docs/search', 'm1', { q: 'x' }],
      ['webSearch', 'w1', { query: 'subvisor', action: null }],
      ['fileChange', 'p1', { changes: [{ path: '/w/a.txt', kind: { type: 'add' }, diff: '+x' }] }],
    ]);
    expect(h.ofType('tool-result').map((event) => [event.name, event.isError, event.result])).toEqual([
      ['docs/search', true, { message: 'server gone' }],
      ['webSearch', false, [{ url: 'u' }]],
      ['fileChange', false, 'completed'],
    ]);
    expect(h.events.filter((event) => event.type === 'tool-call').length).toBe(3);
  });

  it('marks a command that exits non-zero an error, and shows an item it does not map as info', () => {
    const h = running();
    h.notify('item/completed', itemParams({ type: 'commandExecution', id: 'c1', command: 'false', cwd: '/w', status: 'completed', aggregatedOutput: '', exitCode: 1, durationMs: 3 }));
    h.notify('item/completed', itemParams({ type: 'contextCompaction', id: 'cc1' }));
    expect(h.ofType('tool-result')).toEqual([expect.objectContaining({ isError: true, durationSeconds: 0.003 })]);
    expect(h.events.at(-1)).toMatchObject({ type: 'info', nativeType: 'item/completed', summary: 'contextCompaction completed' });
  });
});

describe('what Codex says of errors and limits', () => {
  it("takes the provider's own message out of a body, and keeps any other text", () => {
    expect(errorMessageOf('{"error":{"message":"scripted failure: bad request","type":"invalid_request_error"}}')).toBe('scripted failure: bad request');
    expect(errorMessageOf('{"message":"plain"}')).toBe('plain');
    expect(errorMessageOf('Reconnecting... 1/5')).toBe('Reconnecting... 1/5');
    expect(errorMessageOf('{not json')).toBe('{not json');
  });

  it('reads a usage limit, an overload and a reached limit type as limited; another error is no news', () => {
    expect(errorRateLimit({ error: { message: 'You hit your usage limit', codexErrorInfo: 'usageLimitExceeded' }, willRetry: false })).toMatchObject({ status: 'limited', limitType: 'usageLimitExceeded', agentRetries: false });
    expect(errorRateLimit({ error: { message: 'busy', codexErrorInfo: { httpConnectionFailed: { httpStatusCode: 529 } } }, willRetry: true })).toMatchObject({ status: 'limited', httpStatus: 529 });
    expect(errorRateLimit({ error: { message: 'bad', codexErrorInfo: 'other' }, willRetry: false })).toBeUndefined();
    expect(errorRateLimit({ error: { message: 'x', codexErrorInfo: { responseStreamDisconnected: { httpStatusCode: 500 } } }, willRetry: true })).toBeUndefined();
    expect(accountRateLimit({ rateLimits: { primary: null, secondary: null, rateLimitReachedType: 'workspace_owner_credits_depleted' } })).toMatchObject({ status: 'limited', limitType: 'workspace_owner_credits_depleted' });
    expect(accountRateLimit({ rateLimits: { primary: { usedPercent: 12, windowDurationMins: 300, resetsAt: null }, secondary: null } })).toMatchObject({ status: 'allowed', limitType: 'primary' });
  });
});
