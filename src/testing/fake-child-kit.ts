// fakeChild(): the command, args and env of a scripted fake child, its transcripts, liveness and temp files.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FAKE_TOKEN_ENV, liveFakeProcesses } from './liveness.js';
import { readTranscript } from './transcript.js';
import type { ChildTranscript } from './transcript.js';
import { isBuiltinScenarioName } from './scenario.js';
import type { BuiltinScenarioName, Scenario } from './scenario.js';
import { CHILD_ENV, KIT_FLAG } from './child-env.js';

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
   * The built `dist/testing/fake-child.js`, the kit's argument (token, scenario, cadence, private directory), then
   * the scenario reference. Pass them unchanged.
   */
  args: string[];
  /**
   * `options.env` (empty without it). Nothing of the kit's is here, so `spawnRun({ ...fake, env: yours })` is safe;
   * the `FEN_WIRE_*` variables are the parent's job.
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
   * the token of the kit argument (which a spread followed by your own `env` cannot remove).
   */
  livePids(): number[];
  /** Removes the temporary files the kit made (scenario file, transcripts). Safe to call twice. */
  cleanup(): void;
  [Symbol.dispose](): void;
}

/** Temp directories made by the kit in this process and not yet cleaned up. */
const liveDirs = new Set<string>();

function removeLiveDirs(): void {
  for (const dir of liveDirs) rmSync(dir, { recursive: true, force: true });
  liveDirs.clear();
}

/**
 * Leftovers are removed when the process exits. An 'exit' listener holds no handle, and it is registered
 * only while the kit has temp dirs, so nothing of the kit stays on the process after cleanup. (No signal
 * handlers: they would change how the host process dies; a process killed by a signal keeps its leftovers.)
 */
function trackDir(dir: string): void {
  if (liveDirs.size === 0) process.on('exit', removeLiveDirs);
  liveDirs.add(dir);
}

function untrackDir(dir: string): void {
  if (!liveDirs.delete(dir)) return;
  if (liveDirs.size === 0) process.removeListener('exit', removeLiveDirs);
}

let cachedScript: string | undefined;

/**
 * The built child script. Walks up from this module (a shared chunk in dist/, or src/testing/ under
 * vitest) to the package root, the directory whose package.json is named `subvisor`.
 */
export function fakeChildScript(): string {
  if (cachedScript !== undefined) return cachedScript;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) {
      try {
        const parsed = JSON.parse(readFileSync(manifest, 'utf8')) as { name?: unknown };
        if (parsed.name === 'subvisor') {
          cachedScript = join(dir, 'dist', 'testing', 'fake-child.js');
          if (!existsSync(cachedScript)) {
            throw new Error(`subvisor/testing: ${cachedScript} is missing; build the package first (npx tsup)`);
          }
          return cachedScript;
        }
      } catch (error) {
        if (error instanceof SyntaxError) {
          // An unreadable manifest is not ours: keep walking up.
        } else {
          throw error;
        }
      }
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error('subvisor/testing: cannot find the subvisor package root');
    dir = parent;
  }
}

/** Scenarios up to this size travel inline in the environment; bigger ones go to a private temp file. */
const INLINE_SCENARIO_BYTES = 32 * 1024;

/**
 * Describes a fake child running `scenario` (a built-in name or a {@link Scenario}). Nothing is spawned:
 * pass the result to whatever spawns children. Call `cleanup()` (or use `using`) when done; leftovers
 * are also removed when this process exits.
 */
export function fakeChild(scenario: Scenario | BuiltinScenarioName, options: FakeChildOptions = {}): FakeChild {
  if (typeof scenario === 'string' && !isBuiltinScenarioName(scenario)) {
    throw new Error(`subvisor/testing: unknown built-in scenario ${JSON.stringify(scenario)}`);
  }
  const script = fakeChildScript();
  const token = randomBytes(8).toString('hex');
  const dir = mkdtempSync(join(tmpdir(), 'subvisor-fake-'));
  trackDir(dir);
  // The kit's bookkeeping travels in an argument (see KIT_FLAG), where spreading the fake child and passing
  // your own `env` cannot clobber it.
  const kit: Record<string, string> = { [FAKE_TOKEN_ENV]: token, [CHILD_ENV.ownerPid]: String(process.pid) };
  if (options.turnTickMs !== undefined) kit[CHILD_ENV.turnTickMs] = String(options.turnTickMs);
  if (options.idleTickMs !== undefined) kit[CHILD_ENV.idleTickMs] = String(options.idleTickMs);

  let reference: string;
  if (typeof scenario === 'string') {
    reference = scenario;
  } else {
    const json = JSON.stringify(scenario);
    if (Buffer.byteLength(json) <= INLINE_SCENARIO_BYTES) {
      kit[CHILD_ENV.scenario] = json;
      reference = 'env';
    } else {
      reference = join(dir, 'scenario.json');
      writeFileSync(reference, json, { mode: 0o600 });
    }
  }
  const transcriptsOn = options.transcript ?? true;
  if (transcriptsOn) kit[CHILD_ENV.transcriptDir] = dir;

  const transcriptFiles = (): string[] => {
    if (!transcriptsOn || !existsSync(dir)) return [];
    return readdirSync(dir)
      .filter((name) => name.startsWith('transcript-') && name.endsWith('.jsonl'))
      .sort()
      .map((name) => join(dir, name));
  };

  const cleanup = (): void => {
    rmSync(dir, { recursive: true, force: true });
    untrackDir(dir);
  };

  return {
    command: process.execPath,
    args: [script, `${KIT_FLAG}${JSON.stringify(kit)}`, reference],
    env: { ...options.env },
    token,
    transcripts: () => transcriptFiles().map(readTranscript),
    transcript() {
      if (!transcriptsOn) throw new Error('subvisor/testing: this fake child was made with transcript: false');
      const files = transcriptFiles();
      const last = files[files.length - 1];
      if (last === undefined) {
        throw new Error(
          'subvisor/testing: no fake child has started from this fakeChild() yet; start it with the command and args ' +
            'fakeChild() returned, e.g. spawnRun({ ...fake, task }) (your own env may follow the spread)',
        );
      }
      return readTranscript(last);
    },
    livePids: () => liveFakeProcesses(token),
    cleanup,
    [Symbol.dispose]: cleanup,
  };
}
