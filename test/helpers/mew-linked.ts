// An in-process pair: a MewSession wired to a FakeMewDaemon without sockets (messages cross on microtasks; a drop re-attaches like the channel).
import { spellTag } from '../../src/drivers/mew/messages.js';
import type { MewWireCase } from '../../src/drivers/mew/messages.js';
import { MewSession } from '../../src/drivers/mew/mew-session.js';
import type { MewSessionOptions } from '../../src/drivers/mew/session-types.js';
import { FakeMewDaemon } from '../../src/testing/mew/daemon.js';
import type { ClientLink } from '../../src/testing/mew/daemon.js';
import type { MewDaemonScenario } from '../../src/testing/mew/scenario.js';
import { mewRecorder } from './mew-recorder.js';

/** `wireCase`: how the session's messages are spelled on their way to the daemon (the driver's `mewTagCase`). */
export function linkedMew(scenario: MewDaemonScenario, { wireCase = 'snake_case', ...options }: Partial<MewSessionOptions> & { wireCase?: MewWireCase } = {}) {
  const daemon = new FakeMewDaemon(scenario);
  const rec = mewRecorder();
  let link: ClientLink | undefined;
  let up = false;
  let session!: MewSession;
  const connect = () => {
    let open = true;
    up = true;
    const current = daemon.connect({
      send: (text) => queueMicrotask(() => open && session.onFrame(JSON.parse(text))),
      drop: () => {
        if (!open) return;
        open = false;
        up = false;
        queueMicrotask(() => {
          current.closed();
          if (session.connectionLost('connection-lost', 'the connection dropped (1006)')) connect();
        });
      },
    });
    link = current;
    queueMicrotask(() => session.opened());
  };
  session = new MewSession(
    {
      send: (message) => {
        if (!up) return false;
        rec.sent.push(message);
        const target = link!;
        // As the driver puts a session's message on the wire.
        const text = JSON.stringify({ ...message, type: spellTag(message.type, wireCase) });
        queueMicrotask(() => target.message(text));
        return true;
      },
      leave: () => {
        rec.log.push(['leave']);
        up = false;
        // After what was sent before it, as a WebSocket's close frame follows its queued messages.
        const target = link;
        queueMicrotask(() => target?.closed());
      },
      attached: () => void rec.log.push(['attached']),
    },
    rec.facts,
    { protocol: 'mew', requestIdPrefix: 'r', maxAnswerChars: 1_000_000, ...options },
  );
  connect();
  const until = async (check: () => boolean, limitMs = 5000) => {
    const start = Date.now();
    while (!check()) {
      if (Date.now() - start > limitMs) throw new Error(`condition not met within ${limitMs} ms: ${JSON.stringify(rec.log)}`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  };
  const ended = () => until(() => rec.log.some((entry) => entry[0] === 'exit' || entry[0] === 'fatal'));
  return { daemon, rec, session, ended, until, stop: () => session.dispose() };
}
