// Runs over the mew driver whose connections reach a FakeMewDaemon in-process (no sockets): the core and driver without a transport.
import type { MewConnector, MewDriverConfig } from '../../src/drivers/mew/mew-driver.js';
import { MewDriver } from '../../src/drivers/mew/mew-driver.js';
import { resolveOptions } from '../../src/run/spawn-run.js';
import { SupervisedRun } from '../../src/run/supervised-run.js';
import type { Run, RunOptions } from '../../src/run/types/index.js';
import { FakeMewDaemon } from '../../src/testing/mew/daemon.js';
import type { MewDaemonScenario } from '../../src/testing/mew/scenario.js';

/** A connector to `daemon` (or one that is refused); `open` counts the connections still open. */
export function inProcessConnector(daemon: FakeMewDaemon | undefined) {
  let live = 0;
  const connector: MewConnector = (_url, handlers) => {
    if (daemon === undefined) {
      queueMicrotask(() => handlers.closed('connect ECONNREFUSED', true));
      return { send: () => undefined, close: () => undefined, terminate: () => undefined };
    }
    let open = true;
    live++;
    const shut = (reason: string) => {
      if (!open) return;
      open = false;
      live--;
      link.closed();
      queueMicrotask(() => handlers.closed(reason, false));
    };
    const link = daemon.connect({
      send: (text) => queueMicrotask(() => open && handlers.message(text)),
      drop: () => queueMicrotask(() => shut('the connection dropped (1006)')),
    });
    queueMicrotask(() => open && handlers.open());
    return {
      send: (text) => queueMicrotask(() => open && link.message(text)),
      close: () => queueMicrotask(() => shut('closed (1000)')),
      terminate: () => shut('terminated'),
    };
  };
  return { connector, open: () => live };
}

export function inProcessMewRun(scenario: MewDaemonScenario | undefined, options: Omit<RunOptions, 'command'> = {}, config: Partial<MewDriverConfig> = {}) {
  const daemon = scenario === undefined ? undefined : new FakeMewDaemon(scenario);
  const { connector, open } = inProcessConnector(daemon);
  const resolved = { ...resolveOptions({ ...options, command: 'mew' }), protocol: 'mew' };
  const full: MewDriverConfig = { url: 'ws://in-process', sessionId: undefined, wireCase: 'snake_case', pingIntervalMs: 50, pongTimeoutMs: 300, reconnectGraceMs: 1000, ownsDaemon: false, ...config };
  const run: Run = new SupervisedRun(resolved, { validate: () => undefined, create: (context) => new MewDriver(context, full, connector) });
  return { run, daemon, openConnections: open };
}
