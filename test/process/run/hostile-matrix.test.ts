// One hostile scenario matrix over every protocol: the run core's promises hold whatever the child or daemon does.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Outcome, RunEvent } from '../../../src/index.js';
import { CELLS, PROTOCOLS, THINKING, TOOL_INPUT } from '../../helpers/matrix-protocols.js';
import type { Cell, MatrixProtocol } from '../../helpers/matrix-protocols.js';

/** Every cell ends within this (the slowest: a deadline of 0.5 s rounded up to the second, then 300 ms graces). */
const BOUND_MS = 15_000;
/** How long what a run released may take to be gone after its outcome (a socket's close, a reaped grandchild). */
const SETTLE_MS = 5_000;

async function until(check: () => boolean): Promise<boolean> {
  const deadline = Date.now() + SETTLE_MS;
  while (!check()) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return true;
}

/** Open descriptors of this process (sockets, files, pipes). */
const descriptors = (): number => readdirSync('/proc/self/fd').length;

async function playCell(protocol: MatrixProtocol, cell: Cell): Promise<void> {
  const stateDir = mkdtempSync(join(tmpdir(), `matrix-${protocol.name}-`));
  const fdsBefore = descriptors();
  const started = await protocol.start(cell, stateDir);
  const { run } = started;
  const outcomes: Outcome[] = [];
  run.on('outcome', (outcome) => outcomes.push(outcome));
  const events: RunEvent[] = [];
  let text = '';
  try {
    const consumed = (async () => {
      for await (const chunk of run.text()) text += chunk;
    })();
    run.on('event', (event) => events.push(event));
    const outcome = await Promise.race([
      run.outcome,
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${protocol.name}/${cell}: no outcome within ${BOUND_MS} ms`)), BOUND_MS)),
    ]);
    await consumed;
    const expected = protocol.expect(cell);

    // Exactly one outcome, as the cell expects.
    expect(outcomes).toHaveLength(1);
    expect(outcome).toMatchObject(expected);
    if (expected.errorCode === undefined && outcome.status !== 'done') expect(outcome.errorCode).toBeDefined();

    // The stream's last event is its one exit, and it is the outcome's status.
    expect(events.filter((event) => event.type === 'exit')).toHaveLength(1);
    expect(events.at(-1)).toMatchObject({ type: 'exit', status: outcome.status });

    // The answer holds no thinking and no tool input, in the outcome or in the text stream.
    for (const said of [outcome.finalText ?? '', text]) {
      expect(said).not.toContain(THINKING);
      expect(said).not.toContain(TOOL_INPUT);
    }
    // The peer's own session id, where its protocol has one, for a run that reached its agent.
    if (cell === 'honest') expect(outcome.sessionId !== undefined).toBe(protocol.hasSession);
    // A run that never reached its agent is not done.
    if (!events.some((event) => event.type === 'ready')) expect(outcome.status).not.toBe('done');
  } finally {
    await run.kill('matrix teardown');
    // Nothing of the tree alive, no connection held, no file left, no descriptor leaked.
    const treeGone = started.livePids === undefined || (await until(() => started.livePids!().length === 0));
    const closed = started.openConnections === undefined || (await until(() => started.openConnections!() === 0));
    await started.cleanup();
    const leftovers = readdirSync(stateDir);
    rmSync(stateDir, { recursive: true, force: true });
    expect(treeGone ? [] : started.livePids!()).toEqual([]);
    expect(closed).toBe(true);
    expect(leftovers).toEqual([]);
    expect(await until(() => descriptors() <= fdsBefore)).toBe(true);
  }
}

// The first run of a process opens what every later one shares (the watchdog's pipe, the file watcher):
// one run beforehand, so each cell's count of descriptors compares like with like.
beforeAll(async () => {
  const stateDir = mkdtempSync(join(tmpdir(), 'matrix-warm-up-'));
  const started = await PROTOCOLS[0]!.start('honest', stateDir);
  await started.run.outcome;
  await started.cleanup();
  rmSync(stateDir, { recursive: true, force: true });
});

for (const protocol of PROTOCOLS) {
  describe(`hostile matrix: ${protocol.name}`, () => {
    for (const cell of CELLS) {
      const why = protocol.notApplicable[cell];
      if (why !== undefined) {
        it(`${cell}: does not apply (${why})`, () => {
          expect(why.length).toBeGreaterThan(20);
        });
        continue;
      }
      it(cell, () => playCell(protocol, cell), BOUND_MS + 3 * SETTLE_MS);
    }
  });
}
