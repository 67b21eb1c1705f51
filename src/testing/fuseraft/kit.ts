// fakeFuseraft(): the command, args and env of a fake fuseraft (`repl --vscode` or `run --bridge`), with its transcripts.
import { builtScript, latestTranscript, prepareFakeProcess, spreadsAsOptions } from '../kit.js';
import { isFuseraftBuiltinScenarioName } from './scenario.js';
import type { FuseraftBridgeScenarioName, FuseraftMode, FuseraftReplScenarioName, FuseraftScenario } from './scenario.js';
import { readFuseraftTranscript } from './transcript.js';
import type { FuseraftTranscript } from './transcript.js';
import { refuseUnknownKeys } from '../../text/option-keys.js';

export interface FakeFuseraftOptions {
  /** Whether each process writes a transcript (see {@link FakeFuseraft.transcript}). Default true. */
  transcript?: boolean;
  /** Extra environment for the process (merged over the kit's own variables). */
  env?: Record<string, string>;
  /** Bridge: the `-c` config path. Default: a small config file the kit writes (and removes on cleanup). */
  config?: string;
}

/**
 * A fake fuseraft ready to spawn: `command`, `args` and `env` are its only enumerable keys, so spread it into
 * a run's options (`spawnRun({ protocol: 'fuseraft',
 * ...fakeFuseraft('repl', 'chat'), task })`). For the bridge the driver appends the task, as for fuseraft.
 */
export interface FakeFuseraft {
  mode: FuseraftMode;
  /** The Node binary running this process (`process.execPath`). */
  command: string;
  /**
   * The built `dist/testing/fake-fuseraft.js`, the scenario reference, then `repl --vscode --no-banner` or
   * `run --bridge -c <config>`.
   */
  args: string[];
  /** The kit's variables (scenario, transcript directory, token). */
  env: Record<string, string>;
  /** The token in every process of this fake (fuseraft and its grandchildren), for `liveFakeProcesses`. */
  token: string;
  /** The bridge's config path (undefined in repl mode). */
  config?: string;
  /** What the most recently started process saw and did. Throws when none started or transcripts are off. */
  transcript(): FuseraftTranscript;
  /** The transcripts of every process started from this fake, oldest first. */
  transcripts(): FuseraftTranscript[];
  /** Pids of this fake's processes still alive (fuseraft and grandchildren, even orphaned ones). */
  livePids(): number[];
  /** Removes the temporary files the kit made (scenario file, config, transcripts). Safe to call twice. */
  cleanup(): void;
  [Symbol.dispose](): void;
}

export function fakeFuseraft(mode: 'repl', scenario?: FuseraftScenario | FuseraftReplScenarioName, options?: FakeFuseraftOptions): FakeFuseraft;
export function fakeFuseraft(mode: 'bridge', scenario?: FuseraftScenario | FuseraftBridgeScenarioName, options?: FakeFuseraftOptions): FakeFuseraft;
/**
 * Describes a fake fuseraft in `mode` running `scenario` (a built-in name of that mode, or a
 * {@link FuseraftScenario}; default `chat` / `success`). Nothing is spawned. Call `cleanup()` (or use `using`)
 * when done; leftovers are also removed when this process exits.
 */
export function fakeFuseraft(
  mode: FuseraftMode,
  scenario: FuseraftScenario | FuseraftReplScenarioName | FuseraftBridgeScenarioName = mode === 'repl' ? 'chat' : 'success',
  options: FakeFuseraftOptions = {},
): FakeFuseraft {
  refuseUnknownKeys(options, Object.keys({ transcript: true, env: true, config: true } satisfies Record<keyof FakeFuseraftOptions, true>), 'fakeFuseraft');
  const script = builtScript('fake-fuseraft.js');
  const transcriptsOn = options.transcript ?? true;
  const fake = prepareFakeProcess({
    scenario,
    isBuiltin: (name) => isFuseraftBuiltinScenarioName(mode, name),
    transcript: transcriptsOn,
    env: options.env,
  });
  const config = mode === 'bridge' ? (options.config ?? fake.privateFile('fuseraft.yaml', 'name: fake\nagents: [Planner, Coder]\n')) : undefined;
  const modeArgs = mode === 'repl' ? ['repl', '--vscode', '--no-banner'] : ['run', '--bridge', '-c', config as string];
  return spreadsAsOptions(
    { command: process.execPath, args: [script, fake.reference, ...modeArgs], env: fake.env },
    {
      mode,
      token: fake.token,
      ...(config === undefined ? {} : { config }),
      transcripts: () => fake.transcriptFiles().map(readFuseraftTranscript),
      transcript: () => latestTranscript(transcriptsOn, fake.transcriptFiles(), readFuseraftTranscript, 'fake fuseraft'),
      livePids: fake.livePids,
      cleanup: fake.cleanup,
      [Symbol.dispose]: fake.cleanup,
    },
  );
}
