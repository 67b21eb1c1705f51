// The kit side shared by every fake program (Fen child, fa, fuseraft): built script, token, scenario, temp files, transcripts.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CHILD_ENV } from './child-env.js';
import { pidNamespace } from './process/lifeline.js';
import { FAKE_TOKEN_ENV, liveFakeProcesses } from './liveness.js';

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

const scripts = new Map<string, string>();

/**
 * The built program `dist/testing/<file>`. Walks up from this module (a shared chunk in dist/, or
 * src/testing/ under vitest) to the package root, the directory whose package.json is named `subvisor`.
 */
export function builtScript(file: string): string {
  const cached = scripts.get(file);
  if (cached !== undefined) return cached;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) {
      try {
        const parsed = JSON.parse(readFileSync(manifest, 'utf8')) as { name?: unknown };
        if (parsed.name === 'subvisor') {
          const script = join(dir, 'dist', 'testing', file);
          if (!existsSync(script)) throw new Error(`subvisor/testing: ${script} is missing; build the package first (npx tsup)`);
          scripts.set(file, script);
          return script;
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

export interface FakeProcessOptions {
  /** A built-in scenario name (checked with `isBuiltin`) or a scenario object (passed as JSON). */
  scenario: string | object;
  isBuiltin(name: string): boolean;
  /** Whether the program writes a transcript per process. */
  transcript: boolean;
  /** Extra environment: the caller's own variables, kept apart from the kit's (see FakeProcess.kit). */
  env?: Record<string, string> | undefined;
}

/** What every fake gets from the kit; each fake adds its command line and its own transcript reader. */
export interface FakeProcess {
  /** The scenario argument: a built-in name, `env` (inline JSON in the kit's variables) or a private file path. */
  reference: string;
  /**
   * The kit's own variables (token, owner pid, inline scenario, transcript directory). A program that takes
   * them as its first argument (`KIT_FLAG`, the Fen child) is out of reach of a caller's own `env`.
   */
  kit: Record<string, string>;
  /** `kit` merged with the caller's `env`, for programs that read the kit's variables from their environment. */
  env: Record<string, string>;
  token: string;
  /** The transcript files written so far, oldest first (sorted by the start time in their names). */
  transcriptFiles(): string[];
  livePids(): number[];
  /** Writes `content` to a private (0600) file `name` in the kit's temp directory; returns its path. */
  privateFile(name: string, content: string): string;
  cleanup(): void;
}

/** Token, owner pid, scenario passing, transcript directory and cleanup, the same for every fake program. */
export function prepareFakeProcess(options: FakeProcessOptions): FakeProcess {
  const token = randomBytes(8).toString('hex');
  const kit: Record<string, string> = { [FAKE_TOKEN_ENV]: token, [CHILD_ENV.ownerPid]: String(process.pid) };
  const namespace = pidNamespace();
  if (namespace !== undefined) kit[CHILD_ENV.ownerPidNamespace] = namespace;

  let dir: string | undefined;
  const privateDir = (): string => {
    if (dir === undefined) {
      dir = mkdtempSync(join(tmpdir(), 'subvisor-fake-'));
      trackDir(dir);
    }
    return dir;
  };

  let reference: string;
  if (typeof options.scenario === 'string') {
    if (!options.isBuiltin(options.scenario)) {
      throw new Error(`subvisor/testing: unknown built-in scenario ${JSON.stringify(options.scenario)}`);
    }
    reference = options.scenario;
  } else {
    const json = JSON.stringify(options.scenario);
    if (Buffer.byteLength(json) <= INLINE_SCENARIO_BYTES) {
      kit[CHILD_ENV.scenario] = json;
      reference = 'env';
    } else {
      reference = join(privateDir(), 'scenario.json');
      writeFileSync(reference, json, { mode: 0o600 });
    }
  }
  if (options.transcript) kit[CHILD_ENV.transcriptDir] = privateDir();
  const env = { ...kit, ...options.env };

  const transcriptFiles = (): string[] => {
    if (!options.transcript || dir === undefined || !existsSync(dir)) return [];
    return readdirSync(dir)
      .filter((name) => name.startsWith('transcript-') && name.endsWith('.jsonl'))
      .sort()
      .map((name) => join(dir as string, name));
  };

  const cleanup = (): void => {
    if (dir === undefined) return;
    rmSync(dir, { recursive: true, force: true });
    untrackDir(dir);
  };

  const privateFile = (name: string, content: string): string => {
    const path = join(privateDir(), name);
    writeFileSync(path, content, { mode: 0o600 });
    return path;
  };

  return { reference, kit, env, token, transcriptFiles, livePids: () => liveFakeProcesses(token), privateFile, cleanup };
}

/** The latest of `files`, read with `read`; throws the kit's usual errors when transcripts are off or none exists. */
export function latestTranscript<T>(transcriptsOn: boolean, files: string[], read: (path: string) => T, what: string): T {
  if (!transcriptsOn) throw new Error(`subvisor/testing: this ${what} was made with transcript: false`);
  const last = files[files.length - 1];
  if (last === undefined) {
    throw new Error(
      `subvisor/testing: no ${what} has started from this helper yet; start it with the command and args the helper ` +
        'returned, unchanged (e.g. spawnRun({ ...fake, task }); your own env may follow the spread)',
    );
  }
  return read(last);
}

/** A transcript file's header and entries; a torn last line (the program was killed mid-write) is skipped. */
export function readTranscriptFile<Entry>(path: string): { pid: number; scenario: string; header: Record<string, unknown>; entries: Entry[] } {
  const text = readFileSync(path, 'utf8');
  let header: Record<string, unknown> = {};
  const entries: Entry[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    let parsed: { kind?: unknown };
    try {
      parsed = JSON.parse(line) as { kind?: unknown };
    } catch {
      continue;
    }
    if (parsed.kind === 'header') header = parsed as Record<string, unknown>;
    else entries.push(parsed as Entry);
  }
  const pid = typeof header['pid'] === 'number' ? header['pid'] : 0;
  const scenario = typeof header['scenario'] === 'string' ? header['scenario'] : 'custom';
  return { pid, scenario, header, entries };
}

/** A stdout stream cut into whole lines, the lines that are JSON objects, and what follows the last newline. */
export function splitStdout(stdout: string): { lines: string[]; objects: Array<Record<string, unknown>>; partial?: string } {
  const cut = stdout.lastIndexOf('\n') + 1;
  const lines = cut > 0 ? stdout.slice(0, cut - 1).split('\n') : [];
  const objects: Array<Record<string, unknown>> = [];
  for (const line of lines) {
    try {
      const parsed: unknown = JSON.parse(line);
      if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) objects.push(parsed as Record<string, unknown>);
    } catch {
      // not JSON: prose, noise or garbage
    }
  }
  return cut < stdout.length ? { lines, objects, partial: stdout.slice(cut) } : { lines, objects };
}

/**
 * `options` (command, args, env) with the kit's `members` added as non-enumerable properties, so that
 * `spawnRun({ ...fake, task })` copies exactly the spawn options (spawnRun refuses keys it does not
 * know) while `fake.livePids()` and the rest still work.
 */
export function spreadsAsOptions<O extends object, M extends object>(options: O, members: M): O & M {
  for (const key of Reflect.ownKeys(members)) {
    Object.defineProperty(options, key, { value: members[key as keyof M], enumerable: false, writable: true, configurable: true });
  }
  return options as O & M;
}

