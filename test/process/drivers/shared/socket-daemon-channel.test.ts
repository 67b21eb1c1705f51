// DaemonChannel: how a daemon connection's end ends the run (refused, lost, re-attached within the grace, left), with a recording sink.
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import type { WebSocket } from 'ws';
import type { DriverContext, DriverSink } from '../../../../src/protocol/driver.js';
import { resolveConnectOptions } from '../../../../src/api/connect-run.js';
import type { ConnectOptions } from '../../../../src/index.js';
import { DaemonChannel } from '../../../../src/drivers/shared/socket/daemon-channel.js';
import type { DaemonProtocolHooks } from '../../../../src/drivers/shared/socket/daemon-channel.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function server() {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
  const sockets: WebSocket[] = [];
  wss.on('connection', (socket) => sockets.push(socket));
  cleanups.push(() => new Promise<void>((resolve) => {
    for (const client of wss.clients) client.terminate();
    wss.close(() => resolve());
  }));
  return { wss, sockets, url: `ws://127.0.0.1:${(wss.address() as { port: number }).port}/attach` };
}

function harness(options: Record<string, unknown>, hooks: Partial<DaemonProtocolHooks> = {}) {
  const facts: string[] = [];
  let goneResolve!: () => void;
  const gone = new Promise<void>((resolve) => (goneResolve = resolve));
  const sink = {
    event: (event: { type: string; seq: number; run: string }) => facts.push(`event:${event.type}:${event.seq}:${event.run}`),
    rejected: (event: { code: string }) => facts.push(`rejected:${event.code}`),
    fatal: (code: string) => facts.push(`fatal:${code}`),
    gone: () => {
      facts.push('gone');
      goneResolve();
    },
  } as unknown as DriverSink;
  const resolved = resolveConnectOptions({ protocol: 'test', pingIntervalMs: 0, ...options } as unknown as ConnectOptions);
  const context: DriverContext = {
    runId: 'r1',
    startedAt: Date.now(),
    options: resolved,
    sink,
    shouldPause: () => false,
    backpressure: () => false,
  };
  const opens: boolean[] = [];
  let channel!: DaemonChannel;
  channel = new DaemonChannel(context, {
    opened: (reattach) => {
      opens.push(reattach);
      facts.push(`opened:${reattach}`);
    },
    frame: (frame) => facts.push(`frame:${frame.type}`),
    lost: () => false,
    ...hooks,
  });
  cleanups.push(() => channel.dispose());
  return { channel, facts, gone, opens };
}

async function waitFor(check: () => boolean, what: string): Promise<void> {
  const until = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('DaemonChannel', () => {
  it('a refused first connection: fatal connection-refused, then gone', async () => {
    const { channel, facts, gone } = harness({ socketPath: '/nonexistent/daemon.sock' });
    channel.open();
    await gone;
    expect(facts).toEqual(['fatal:connection-refused', 'gone']);
  });

  it('stamps events, passes frames and rejections, and leave() ends with gone', async () => {
    const daemon = await server();
    const { channel, facts, gone } = harness({ url: daemon.url });
    channel.open();
    await waitFor(() => daemon.sockets.length === 1 && facts.includes('opened:false'), 'open');
    daemon.sockets[0]!.send('{"type":"hello"}');
    daemon.sockets[0]!.send('nope');
    await waitFor(() => facts.length === 3, 'the frames');
    channel.event({ type: 'info', summary: 'x' });
    channel.leave(1000);
    await gone;
    expect(facts).toEqual(['opened:false', 'frame:hello', 'rejected:malformed', 'event:info:1:r1', 'gone']);
    expect(channel.send({ type: 'late' })).toBe(false);
  });

  it('a lost connection the protocol does not re-attach: fatal connection-lost, then gone', async () => {
    const daemon = await server();
    const { channel, facts, gone } = harness({ url: daemon.url });
    channel.open();
    await waitFor(() => daemon.sockets.length === 1, 'the connection');
    daemon.sockets[0]!.terminate();
    await gone;
    expect(facts).toEqual(['opened:false', 'fatal:connection-lost', 'gone']);
  });

  it('re-attaches within the grace when the protocol asks, and gives up when the grace is spent', async () => {
    const daemon = await server();
    const { channel, facts, opens } = harness({ url: daemon.url, reconnectGraceMs: 10_000 }, { lost: () => true });
    channel.open();
    await waitFor(() => daemon.sockets.length === 1 && opens.length === 1, 'the connection');
    daemon.sockets[0]!.terminate();
    await waitFor(() => opens.length === 2, 're-attach');
    expect(opens).toEqual([false, true]);
    expect(channel.reattaching).toBe(true);
    channel.attached();
    expect(channel.reattaching).toBe(false);
    expect(facts.filter((fact) => fact.startsWith('event:info'))).toHaveLength(1);

    // The daemon goes away for good: attempts fail until the grace is spent.
    const again = harness({ url: daemon.url, reconnectGraceMs: 300 }, { lost: () => true });
    again.channel.open();
    await waitFor(() => daemon.sockets.length === 3, 'the second connection');
    for (const client of daemon.wss.clients) client.terminate();
    await new Promise<void>((resolve) => daemon.wss.close(() => resolve()));
    await again.gone;
    expect(again.facts.slice(-2)).toEqual(['fatal:connection-lost', 'gone']);
  });
});
