// fakeFa(): the command, args and env of a fake `fa` for `spawnRun({ protocol: 'hep', ... })`, with its transcripts.
import { builtScript, latestTranscript, prepareFakeProcess, spreadsAsOptions } from '../kit.js';
import { isFaBuiltinScenarioName } from './scenario.js';
import type { FaBuiltinScenarioName, FaScenario } from './scenario.js';
import { readFaTranscript } from './transcript.js';
import type { FaTranscript } from './transcript.js';
import { refuseUnknownKeys } from '../../text/option-keys.js';

export interface FakeFaOptions {
  /**
   * How stdout is asked for: `events` (default: `--output events`), `events=full` (raw tool arguments),
   * or `prose` (no `--output` flag: fa prints prose).
   */
  output?: 'events' | 'events=full' | 'prose';
  /** Whether each process writes a transcript (see {@link FakeFa.transcript}). Default true. */
  transcript?: boolean;
  /** Extra environment for the process (merged over the kit's own variables). */
  env?: Record<string, string>;
}

/**
 * A fake fa ready to spawn: spread it into a run's options (`spawnRun({ protocol: 'hep', ...fakeFa('tools'),
 * task })`); the driver appends `-p <task>`, as it does for the real fa.
 */
export interface FakeFa {
  /** The Node binary running this process (`process.execPath`). */
  command: string;
  /** The built `dist/testing/fake-fa.js`, the scenario reference, then `--output events` (per `output`). */
  args: string[];
  /** The kit's variables (scenario, transcript directory, token). */
  env: Record<string, string>;
  /** The token in every process of this fake (fa and its grandchildren), for `liveFakeProcesses`. */
  token: string;
  /** What the most recently started process saw and did. Throws when none started or transcripts are off. */
  transcript(): FaTranscript;
  /** The transcripts of every process started from this fake, oldest first. */
  transcripts(): FaTranscript[];
  /** Pids of this fake's processes still alive (fa and grandchildren, even orphaned ones). */
  livePids(): number[];
  /** Removes the temporary files the kit made (scenario file, transcripts). Safe to call twice. */
  cleanup(): void;
  [Symbol.dispose](): void;
}

/**
 * Describes a fake fa running `scenario` (a built-in name or a {@link FaScenario}). Nothing is spawned.
 * Call `cleanup()` (or use `using`) when done; leftovers are also removed when this process exits.
 */
export function fakeFa(scenario: FaScenario | FaBuiltinScenarioName, options: FakeFaOptions = {}): FakeFa {
  refuseUnknownKeys(options, Object.keys({ output: true, transcript: true, env: true } satisfies Record<keyof FakeFaOptions, true>), 'fakeFa');
  const script = builtScript('fake-fa.js');
  const transcriptsOn = options.transcript ?? true;
  const fake = prepareFakeProcess({ scenario, isBuiltin: isFaBuiltinScenarioName, transcript: transcriptsOn, env: options.env });
  const output = options.output ?? 'events';
  return spreadsAsOptions(
    { command: process.execPath, args: [script, fake.reference, ...(output === 'prose' ? [] : ['--output', output])], env: fake.env },
    {
      token: fake.token,
      transcripts: () => fake.transcriptFiles().map(readFaTranscript),
      transcript: () => latestTranscript(transcriptsOn, fake.transcriptFiles(), readFaTranscript, 'fake fa'),
      livePids: fake.livePids,
      cleanup: fake.cleanup,
      [Symbol.dispose]: fake.cleanup,
    },
  );
}
