// The Fen fake child as run options: fakeChild() describes the built subvisor-fake-child for spawnRun, with its transcripts and liveness.
import { builtScript, latestTranscript, prepareFakeProcess, spreadsAsOptions } from './kit.js';
import { readTranscript } from './transcript.js';
import type { ChildTranscript } from './transcript.js';
import { isBuiltinScenarioName } from './scenario.js';
import type { BuiltinScenarioName, Scenario } from './scenario.js';
import { CHILD_ENV, KIT_FLAG } from './child-env.js';
import { refuseUnknownKeys } from '../text/option-keys.js';

export interface FakeChildOptions {
  /** Tick while a turn runs, in ms. Default 30 (Fen's cadence); tests may go much lower. */
  turnTickMs?: number;
  /** Tick while idle, in ms. Default 300 (Fen's cadence). */
  idleTickMs?: number;
  /** Whether the child writes a transcript (see {@link FakeChild.transcript}). Default true. */
  transcript?: boolean;
  /** Extra environment for the child: returned as the fake child's `env` (the kit's own variables travel in `args`). */
  env?: Record<string, string>;
}

/** A fake child ready to spawn: spread it into a run's options (`spawnRun({ ...fakeChild('demo'), task })`). */
export interface FakeChild {
  /** The Node binary running this process (`process.execPath`). */
  command: string;
  /**
   * The built `dist/testing/fake-child.js`, the kit's argument (`--subvisor-fake-kit=<JSON>`: token, scenario,
   * cadence, transcript directory), then the scenario reference. Pass them unchanged.
   */
  args: string[];
  /**
   * `options.env` (empty without it). Nothing of the kit's is here, so `spawnRun({ ...fake, env: yours })` keeps
   * `livePids()` and `transcript()` working; the `FEN_WIRE_*` variables are the parent's job.
   */
  env: Record<string, string>;
  /** The token in every process of this fake child (child and grandchildren), for {@link liveFakeProcesses}. */
  token: string;
  /**
   * What the most recently started child process of this fake child saw and did. Throws when no child has
   * started yet or transcripts are off. Read it after the run ended for the whole story.
   */
  transcript(): ChildTranscript;
  /** The transcripts of every child process started from this fake child (one per spawn), oldest first. */
  transcripts(): ChildTranscript[];
  /**
   * Pids of this fake child's processes still alive (children and grandchildren, even orphaned ones), found by
   * the token of the kit argument (the child) and of the environment (grandchildren inherit it).
   */
  livePids(): number[];
  /** Removes the temporary files the kit made (scenario file, transcripts). Safe to call twice. */
  cleanup(): void;
  [Symbol.dispose](): void;
}

/** The built Fen fake child script (`dist/testing/fake-child.js`). */
export function fakeChildScript(): string {
  return builtScript('fake-child.js');
}

const FAKE_CHILD_OPTION_KEYS = Object.keys({ turnTickMs: true, idleTickMs: true, transcript: true, env: true } satisfies Record<keyof FakeChildOptions, true>);

/**
 * Describes a fake child running `scenario` (a built-in name or a {@link Scenario}). Nothing is spawned:
 * pass the result to whatever spawns children. Call `cleanup()` (or use `using`) when done; leftovers
 * are also removed when this process exits.
 */
export function fakeChild(scenario: Scenario | BuiltinScenarioName, options: FakeChildOptions = {}): FakeChild {
  refuseUnknownKeys(options, FAKE_CHILD_OPTION_KEYS, 'fakeChild');
  const script = fakeChildScript();
  const transcriptsOn = options.transcript ?? true;
  const fake = prepareFakeProcess({ scenario, isBuiltin: isBuiltinScenarioName, transcript: transcriptsOn });
  // The kit's bookkeeping travels in an argument, where a spread followed by the caller's own `env` cannot reach it.
  const kit = { ...fake.kit };
  if (options.turnTickMs !== undefined) kit[CHILD_ENV.turnTickMs] = String(options.turnTickMs);
  if (options.idleTickMs !== undefined) kit[CHILD_ENV.idleTickMs] = String(options.idleTickMs);
  return spreadsAsOptions(
    { command: process.execPath, args: [script, `${KIT_FLAG}${JSON.stringify(kit)}`, fake.reference], env: { ...options.env } },
    {
      token: fake.token,
      transcripts: () => fake.transcriptFiles().map(readTranscript),
      transcript: () => latestTranscript(transcriptsOn, fake.transcriptFiles(), readTranscript, 'fake child'),
      livePids: fake.livePids,
      cleanup: fake.cleanup,
      [Symbol.dispose]: fake.cleanup,
    },
  );
}
