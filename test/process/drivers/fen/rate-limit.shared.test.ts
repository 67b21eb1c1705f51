// A Fen child whose provider refused a call (its `error` "HTTP 429: ..."): the run hears rate-limit news when the line is read, and publishes it after the error.
import { afterEach, describe, expect, it } from 'vitest';
import type { RateLimitFields } from '../../../../src/index.js';
import type { Scenario } from '../../../../src/testing/index.js';
import { reapLeftovers, supervise } from '../../../helpers/spawn-harness.js';

afterEach(reapLeftovers);

const REFUSED = 'HTTP 429: {"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}';

/** One turn whose model call was refused, as Fen ends it: the error, then a turn that stopped on `error`. */
const REFUSED_TURN: Scenario = {
  name: 'provider-429',
  turns: [{ steps: [{ error: REFUSED }], answer: `[error] ${REFUSED}`, stopReason: 'error' }],
};

describe('a Fen child reports a provider 429', () => {
  it("as rate-limit news: the listener's report, then the error and the rate-limit event with one seq; the run ends as the child says", async () => {
    const s = supervise(REFUSED_TURN, { task: 'go' });
    const heard: RateLimitFields[] = [];
    s.run.on('rate-limit', (report) => heard.push(report));
    const outcome = await s.finish({ status: 'done' });
    expect(outcome.finalText).toBe(`[error] ${REFUSED}`);
    const report = { status: 'limited', httpStatus: 429, agentRetries: false, nativeType: 'error', message: REFUSED };
    expect(heard).toEqual([report]);
    const at = s.events.findIndex((event) => event.type === 'error');
    const [error, limit] = s.events.slice(at, at + 2);
    expect(error).toMatchObject({ type: 'error', error: REFUSED });
    expect(limit).toEqual({ type: 'rate-limit', v: 1, seq: error?.type === 'error' ? error.seq : -1, run: s.run.id, ...report });
  });

  it('an error that is no refusal stays an error alone', async () => {
    const s = supervise({ turns: [{ steps: [{ error: 'HTTP 500: boom' }], answer: 'ok' }] }, { task: 'go' });
    let heard = 0;
    s.run.on('rate-limit', () => heard++);
    await s.finish({ status: 'done' });
    expect(s.events.some((event) => event.type === 'error')).toBe(true);
    expect(s.events.some((event) => event.type === 'rate-limit')).toBe(false);
    expect(heard).toBe(0);
  });
});
