// Unit tests of the shared stdio channel over a linked in-memory pair: lines, bounds, backpressure, writes, stdin failure, the bounded drain.
import { describe, expect, it } from 'vitest';
import { StdioChannel } from '../../../../src/drivers/shared/stdio/channel.js';
import type { StdioChannelOptions } from '../../../../src/drivers/shared/stdio/channel.js';
import type { FrameRejection } from '../../../../src/drivers/shared/json-line.js';
import { linkedStdio } from '../../../../src/testing/linked-stdio.js';

function channel(options: Partial<StdioChannelOptions> = {}) {
  const lines: Array<[number, string]> = [];
  const overlong: Array<[number, FrameRejection]> = [];
  const failures: string[] = [];
  let pause = false;
  const made = new StdioChannel({
    maxLineBytes: 64,
    shouldPause: () => pause,
    lines: { line: (text, n) => void lines.push([n, text]), overlong: (rejection, n) => void overlong.push([n, rejection]) },
    inputFailed: (what) => void failures.push(what),
    ...options,
  });
  const pair = linkedStdio();
  made.attach(pair.io);
  return { channel: made, ...pair, lines, overlong, failures, setPause: (value: boolean) => (pause = value) };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

/** Waits (turn by turn, at most 1000 of them) until `check` holds. */
async function until(check: () => boolean): Promise<void> {
  for (let turns = 0; !check() && turns < 1000; turns++) await turn();
}

describe('StdioChannel', () => {
  it('hands over whole lines in order; an overlong one is skipped with its rejection; a cut last line comes back from finish', async () => {
    const { channel: c, peer, lines, overlong } = channel();
    peer.sendRaw('{"type":"a"}\n{"ty');
    peer.sendRaw('pe":"b"}\n');
    peer.send(`{"type":"approval_request","pad":"${'x'.repeat(100)}"}`);
    peer.send({ type: 'c' });
    peer.sendRaw('{"type":"cut');
    await until(() => lines.length === 3);
    expect(lines).toEqual([[1, '{"type":"a"}'], [2, '{"type":"b"}'], [4, '{"type":"c"}']]);
    expect(overlong).toEqual([[3, { code: 'too-large', reason: 'stdout line 3 is longer than the 64-byte line bound (maxFrameBytes); skipped', lineType: 'approval_request' }]]);
    peer.end();
    expect(await c.finish()).toBe('{"type":"cut');
  });

  it('pauses after a chunk while the core says so, and reads on when resumed', async () => {
    const { channel: c, peer, lines, setPause } = channel();
    setPause(true);
    peer.send({ n: 1 });
    await until(() => lines.length === 1);
    peer.send({ n: 2 });
    for (let turns = 0; turns < 5; turns++) await turn();
    expect(lines).toHaveLength(1);
    setPause(false);
    c.resume();
    await until(() => lines.length === 2);
    expect(lines.map(([, text]) => text)).toEqual(['{"n":1}', '{"n":2}']);
  });

  it('writes JSON lines; refuses one over the bound and any after stdin ended', async () => {
    const { channel: c, peer } = channel();
    expect(c.write({ type: 'user_input', text: 'hi' })).toEqual({ ok: true });
    expect(c.write({ text: 'x'.repeat(100) })).toMatchObject({ ok: false, code: 'too-large', reason: expect.stringContaining('longer than the 64-byte line bound') });
    expect(c.inputOpen).toBe(true);
    c.endInput();
    c.endInput();
    expect(c.inputOpen).toBe(false);
    expect(c.write({ type: 'late' })).toEqual({ ok: false, code: 'closed', reason: "the child's stdin is closed" });
    await until(() => peer.inputEnded);
    expect(peer.lines).toEqual(['{"type":"user_input","text":"hi"}']);
    expect(peer.inputEnded).toBe(true);
  });

  it('reports a stdin failure (EPIPE) once, and refuses writes after it', async () => {
    const { channel: c, peer, failures } = channel();
    peer.failInput('EPIPE');
    c.write({ a: 1 });
    await until(() => failures.length > 0);
    expect(c.write({ a: 2 })).toMatchObject({ ok: false, code: 'closed' });
    expect(failures).toEqual(['EPIPE']);
  });

  it('the drain waits for stdout to end, but no longer than its bound (a holder outside the tree)', async () => {
    const { channel: c, peer, lines } = channel({ drainMs: 50 });
    peer.send({ last: true });
    const started = Date.now();
    expect(await c.finish()).toBeUndefined();
    expect(Date.now() - started).toBeGreaterThanOrEqual(40);
    expect(lines).toEqual([[1, '{"last":true}']]);
    // Nothing read after the drain.
    peer.send({ later: true });
    for (let turns = 0; turns < 5; turns++) await turn();
    expect(lines).toHaveLength(1);
    c.dispose();
  });

  it('signals the child through its io', () => {
    const { channel: c, peer } = channel();
    expect(c.signal('SIGINT')).toBe(true);
    expect(peer.signals).toEqual(['SIGINT']);
  });
});
