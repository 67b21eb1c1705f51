// A serveAgent child for the tests: $AGENT_CHILD_BEHAVIOUR picks what its in-process agent does (built dist/ required).
import { writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { serveAgent } from '../../dist/child/index.js';

const behaviour = process.env.AGENT_CHILD_BEHAVIOUR ?? 'echo';
/** Written when the agent's stream is released (its finally ran): proves return() reached it. */
const marker = process.env.AGENT_CHILD_MARKER;
const released = (how) => {
  if (marker) writeFileSync(marker, how);
};

const steers = [];

const behaviours = {
  async *echo(scope, prompt) {
    yield { type: 'thinking', delta: 'thinking about it' };
    yield { type: 'text', delta: 'You said: ' };
    yield { type: 'text', delta: prompt.text };
    yield { type: 'completed', data: { length: prompt.text.length } };
  },
  async *session(scope) {
    yield { type: 'text', delta: scope.session };
    yield { type: 'completed' };
  },
  async *fail() {
    yield { type: 'text', delta: 'partial ' };
    yield { type: 'failed', details: 'provider overloaded', retryable: true, code: 'overloaded' };
  },
  async *'malformed-failed'() {
    yield { type: 'text', delta: 'partial ' };
    // `error` where the seed says `details`: reported as malformed, never as "the agent failed".
    yield { type: 'failed', error: 'asked to fail', retryable: false };
  },
  async *throws() {
    yield { type: 'text', delta: 'about to throw' };
    throw new Error('kaboom');
  },
  async *'no-terminal'() {
    yield { type: 'text', delta: 'and then nothing' };
  },
  async *slow() {
    try {
      for (let tick = 0; tick < 1200; tick++) {
        yield { type: 'text', delta: 'tick ' };
        await sleep(50);
      }
      yield { type: 'completed' };
    } finally {
      released('released');
    }
  },
  async *paced(scope, prompt) {
    yield { type: 'text', delta: `turn for ${prompt.text}` };
    await sleep(300);
    yield { type: 'completed' };
  },
  async *stuck() {
    yield { type: 'text', delta: 'stuck now' };
    await new Promise(() => undefined); // never settles: return() cannot reach the generator
  },
  async *steerable(scope, prompt) {
    yield { type: 'text', delta: `working on ${prompt.text}. ` };
    // Every test that uses this behaviour sends a steer: wait for it however slow the machine is.
    for (let wait = 0; wait < 3000 && steers.length === 0; wait++) await sleep(20);
    yield { type: 'text', delta: `steered: ${steers.join(', ') || 'none'}` };
    yield { type: 'completed' };
  },
  async *huge() {
    yield { type: 'text', delta: 'aé€😀'.repeat(20_000) };
    yield { type: 'completed' };
  },
  async *'big-data'() {
    yield { type: 'text', delta: 'small text' };
    yield { type: 'completed', data: { blob: 'x'.repeat(100_000) } };
  },
  async *extras() {
    yield { type: 'retrying', attempt: 1, maxAttempts: 3, delayMs: 10, reason: 'rate limited' };
    yield { type: 'citation', url: 'https://example.com/a', spans: [{ start: 0, end: 4 }], note: null };
    yield { type: 'text', delta: 'cited' };
    yield { type: 'completed' };
  },
};

const invoke = behaviours[behaviour];
if (invoke === undefined) throw new Error(`unknown behaviour ${behaviour}`);
const agent = { invoke };
if (behaviour === 'steerable') {
  agent.dispatch = async (session, command) => {
    steers.push(`${command.type}:${command.text}`);
    return { status: 'accepted' };
  };
}
await serveAgent(agent, {
  turnTickMs: 5,
  idleTickMs: 20,
  returnGraceMs: Number(process.env.AGENT_CHILD_RETURN_GRACE_MS ?? 2000),
});
