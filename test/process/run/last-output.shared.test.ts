// A child's last output is read whatever the load: the exit of a process can be handled before the last of its output is read from its pipes, and the reap must not close them then.
import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { spawnRun } from '../../../src/index.js';
import type { Outcome } from '../../../src/index.js';
import { fakeFa, fakeFuseraft } from '../../../src/testing/index.js';
import { BOUND_MS, expectEmptyStateDir, freshStateDir, within } from '../../helpers/spawn-harness.js';

/** Forty at once load the machine enough that a child's exit is often handled before its output is read. */
const RUNS = 40;

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

function inStateDir<T>(body: (stateDir: string) => Promise<T>): Promise<T> {
  const stateDir = freshStateDir();
  cleanups.push(() => rmSync(stateDir, { recursive: true, force: true }));
  return body(stateDir).then((result) => {
    expectEmptyStateDir(stateDir);
    return result;
  });
}

const all = (outcomes: Array<Promise<Outcome>>) => Promise.all(outcomes.map((outcome) => within(outcome, BOUND_MS, 'outcome')));

describe(`${RUNS} children writing their last output as they exit`, () => {
  it('outcome.outputTail ends with every child’s last words (before: 1 to 5 in 40-60 tails came out without them)', async () => {
    const outcomes = await inStateDir((stateDir) =>
      all(Array.from({ length: RUNS }, (_, index) => spawnRun({ command: process.execPath, args: ['-e', `process.stdout.write('LAST-WORDS-${index}')`], stateDir, killGraceMs: 200 }).outcome)),
    );
    expect(outcomes.map((outcome) => outcome.outputTail)).toEqual(outcomes.map((_, index) => `LAST-WORDS-${index}`));
  });

  it('HEP: every run reads its last frames and ends done with its whole answer (before: 1 to 3 in 40 ended failed, protocol-error)', async () => {
    const fakes = Array.from({ length: RUNS }, () => fakeFa('echo'));
    cleanups.push(() => fakes.forEach((fake) => fake.cleanup()));
    const outcomes = await inStateDir((stateDir) =>
      all(fakes.map((fake, index) => spawnRun({ protocol: 'hep', ...fake, task: `task number ${index}`, stateDir, killGraceMs: 500 }).outcome)),
    );
    expect(outcomes.map((outcome, index) => [outcome.status, outcome.finalText?.includes(`task number ${index}`) === true])).toEqual(outcomes.map(() => ['done', true]));
    for (const fake of fakes) expect(fake.livePids()).toEqual([]);
  });

  it('fuseraft run --bridge: every run reads its last result and ends done (before: 1 to 4 in 40 ended failed, no-exit-event)', async () => {
    const fakes = Array.from({ length: RUNS }, () => fakeFuseraft('bridge', 'success'));
    cleanups.push(() => fakes.forEach((fake) => fake.cleanup()));
    const outcomes = await inStateDir((stateDir) =>
      all(fakes.map((fake) => spawnRun({ ...fake, protocol: 'fuseraft-bridge', task: 'ship it', stateDir, killGraceMs: 500 }).outcome)),
    );
    expect(outcomes.map((outcome) => [outcome.status, outcome.errorCode])).toEqual(outcomes.map(() => ['done', undefined]));
    for (const fake of fakes) expect(fake.livePids()).toEqual([]);
  });
});
