// An in-process pair: a MewSession wired to a FakeMewDaemon without sockets (messages cross on microtasks).
import { encodeMessage } from '../../src/drivers/mew/messages.js';
import { MewSession } from '../../src/drivers/mew/mew-session.js';
import type { MewSessionOptions } from '../../src/drivers/mew/session-types.js';
import { FakeMewDaemon } from '../../src/testing/mew/daemon.js';
import type { ClientLink } from '../../src/testing/mew/daemon.js';
import type { MewDaemonScenario } from '../../src/testing/mew/scenario.js';
import { mewRecorder } from './mew-recorder.js';

export function linkedMew(scenario: MewDaemonScenario, options: Partial<MewSessionOptions> = {}) {
  const daemon = new FakeMewDaemon(scenario);
  const rec = mewRecorder();
  const timers = new Set<NodeJS.Timeout>();
  let link: ClientLink | undefined;
  let session!: MewSession;
  let up = false;
  const connect = () => {
    let open = true;
    up = true;
    const current = daemon.connect({
      send: (text) => queueMicrotask(() => open && session.onMessage(text)),
      drop: () => {
        if (!open) return;
        open = false;
        up = false;
        queueMicrotask(() => {
          current.closed();
          session.connectionLost('the connection dropped (1006)');
        });
      },
    });
    link = current;
    queueMicrotask(() => session.opened());
    return () => {
      open = false;
    };
  };
  let disconnect = () => undefined as void;
  session = new MewSession(
    {
      send: (message) => {
        if (!up) return false;
        rec.sent.push(message);
        const target = link!;
        const text = encodeMessage(message, options.wireCase ?? 'snake_case');
        queueMicrotask(() => target.message(text));
        return true;
      },
      close: () => {
        rec.log.push(['close']);
        up = false;
        disconnect();
        // After what was sent before it, as a WebSocket's close frame follows its queued messages.
        const target = link;
        queueMicrotask(() => target?.closed());
      },
      reconnect: () => {
        rec.log.push(['reconnect']);
        link?.closed();
        disconnect = connect();
      },
      setTimer: (fn, ms) => {
        const timer = setTimeout(() => {
          timers.delete(timer);
          fn();
        }, ms);
        timers.add(timer);
        return { clear: () => (clearTimeout(timer), timers.delete(timer)) };
      },
    },
    rec.facts,
    { requestIdPrefix: 'r', pingIntervalMs: 50, pongTimeoutMs: 200, reconnect: true, maxAnswerChars: 1_000_000, wireCase: 'snake_case', ...options },
  );
  disconnect = connect();
  /** Resolves once the session reported its exit or a fatal failure. */
  const ended = async (limitMs = 5000) => {
    const start = Date.now();
    while (!rec.log.some((entry) => entry[0] === 'exit' || entry[0] === 'fatal')) {
      if (Date.now() - start > limitMs) throw new Error(`the session did not end within ${limitMs} ms: ${JSON.stringify(rec.log)}`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  };
  const until = async (check: () => boolean, limitMs = 5000) => {
    const start = Date.now();
    while (!check()) {
      if (Date.now() - start > limitMs) throw new Error(`condition not met within ${limitMs} ms: ${JSON.stringify(rec.log)}`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  };
  const stop = () => {
    session.dispose();
    for (const timer of timers) clearTimeout(timer);
  };
  return { daemon, rec, session, ended, until, stop, pendingTimers: () => timers.size };
}
