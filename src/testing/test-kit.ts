// testKit(): spawnRun and fakeChild for test suites, with small graces and a check after each test that ends whatever is left.
import { spawnRun as spawnSupervisedRun } from '../api/spawn-run.js';
import type { Outcome, Run, RunOptions } from '../api/types.js';
import { fakeChild as makeFakeChild, type FakeChild, type FakeChildOptions } from './fen-kit.js';
import { alivePids, waitUntilGone } from './liveness.js';
import type { BuiltinScenarioName, Scenario } from './scenario.js';
import { refuseUnknownKeys } from '../text/option-keys.js';

export interface TestKitOptions {
  /** `killGraceMs` of the kit's runs unless a run sets its own. Default 200 (subvisor's default is 3000). */
  killGraceMs?: number;
  /** Defaults for the kit's fake children. Default `{ turnTickMs: 5, idleTickMs: 20 }`. */
  fake?: FakeChildOptions;
  /** The timeout given to the registered `afterEach` hook, in ms. Default 10000. */
  settleTimeoutMs?: number;
}

/** The `afterEach` of vitest or jest (`afterEach(fn, timeoutMs)`): the kit registers `settle` with it. */
export type AfterEach = (hook: () => Promise<void>, timeoutMs?: number) => void;

export interface TestKit {
  /** `spawnRun` with the kit's `killGraceMs` default; the run is ended by `settle()` if the test leaves it live. */
  spawnRun(options: RunOptions): Run;
  /** `fakeChild` with the kit's defaults; `settle()` kills what it left alive and removes its files. */
  fakeChild(scenario: Scenario | BuiltinScenarioName, options?: FakeChildOptions): FakeChild;
  /**
   * Ends the test's leftovers: SIGKILLs the tree of every run still live and every process of the kit's fake
   * children still alive, waits until they are gone, removes the fakes' files, and forgets them all. Rejects
   * naming what it had to end (a test that leaves a live run or process behind fails), else resolves.
   */
  settle(): Promise<void>;
}

/** testKit's first argument: the test framework's hooks it registers with. */
export interface TestKitHooks {
  afterEach?: AfterEach;
}

/** How long `settle()` waits for killed fake processes to be gone. */
const GONE_TIMEOUT_MS = 5_000;

/**
 * A kit for test suites. Pass vitest's (or jest's) `afterEach` and `settle()` runs after every test:
 *
 *     const kit = testKit({ afterEach });
 *     it('survives a crash', async () => {
 *       const outcome = await kit.spawnRun({ ...kit.fakeChild('crash'), task: 'x' }).outcome;
 *     });
 *
 * Without `afterEach`, call `await kit.settle()` yourself (e.g. from node:test's `afterEach`).
 */
export function testKit(hooks: TestKitHooks = {}, options: TestKitOptions = {}): TestKit {
  refuseUnknownKeys(hooks, Object.keys({ afterEach: true } satisfies Record<keyof TestKitHooks, true>), 'testKit', 'hooks');
  refuseUnknownKeys(options, Object.keys({ killGraceMs: true, fake: true, settleTimeoutMs: true } satisfies Record<keyof TestKitOptions, true>), 'testKit');
  const killGraceMs = options.killGraceMs ?? 200;
  const fakeDefaults: FakeChildOptions = options.fake ?? { turnTickMs: 5, idleTickMs: 20 };
  let runs: Run[] = [];
  let fakes: FakeChild[] = [];

  const settle = async (): Promise<void> => {
    const [ownRuns, ownFakes] = [runs, fakes];
    runs = [];
    fakes = [];
    const live = ownRuns.filter((run) => !run.ended);
    const states = live.map((run) => `${run.id} (${run.state})`);
    await Promise.all(live.map((run): Promise<Outcome> => run.kill('the test ended with the run live')));

    const survivors: number[] = [];
    for (const fake of ownFakes) {
      const pids = fake.livePids();
      for (const pid of pids) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone meanwhile
        }
      }
      survivors.push(...pids);
    }
    const stuck = await waitUntilGone(() => alivePids(survivors), GONE_TIMEOUT_MS);
    for (const fake of ownFakes) fake.cleanup();

    const problems: string[] = [];
    if (live.length > 0) {
      problems.push(
        `the test ended with ${live.length} live run(s), killed now: ${states.join(', ')}. Await run.outcome, or end the run with run.terminate(), before the test ends`,
      );
    }
    if (survivors.length > 0) problems.push(`fake-child processes were still alive after their runs, killed now: ${survivors.join(', ')}`);
    if (stuck.length > 0) problems.push(`and still alive after SIGKILL: ${stuck.join(', ')}`);
    if (problems.length > 0) throw new Error(`subvisor test kit: ${problems.join('; ')}`);
  };

  hooks.afterEach?.(settle, options.settleTimeoutMs ?? 10_000);

  return {
    spawnRun(runOptions) {
      const run = spawnSupervisedRun({ killGraceMs, ...runOptions });
      runs.push(run);
      return run;
    },
    fakeChild(scenario, fakeOptions) {
      const fake = makeFakeChild(scenario, { ...fakeDefaults, ...fakeOptions });
      fakes.push(fake);
      return fake;
    },
    settle,
  };
}
