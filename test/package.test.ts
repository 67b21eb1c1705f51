// The published package: `npm pack` holds exactly the files a consumer needs, and a consumer project that
// installs the tarball (offline, unpacked by hand) imports every entry point from ESM, CommonJS and TypeScript
// and runs every bin.
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const execFileAsync = promisify(execFile);
const root = fileURLToPath(new URL('..', import.meta.url));
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  name: string;
  version: string;
  exports: Record<string, string | { types?: string; default?: string }>;
  bin: Record<string, string>;
  dependencies: Record<string, string>;
};
/** Entry points with code (package.json itself is an export too, checked apart). */
const entryPoints = Object.keys(manifest.exports)
  .filter((subpath) => subpath !== './package.json')
  .map((subpath) => (subpath === '.' ? manifest.name : `${manifest.name}/${subpath.slice(2)}`));
/** One export every entry point must have, to tell a real module from an empty one. */
const KEY_EXPORT: Record<string, string> = {
  subvisor: 'spawnRun',
  'subvisor/wire': 'decode',
  'subvisor/testing': 'fakeChild',
  'subvisor/agent': 'asAgent',
  'subvisor/child': 'serveAgent',
  'subvisor/queue': 'createQueueSupervisor',
};

let scratch: string;
let consumer: string;
let packed: string[];

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'subvisor-pack-'));
  // --ignore-scripts: pack the dist/ this suite was started with (the prepare script would rebuild it under
  // the feet of the other test files).
  const { stdout } = await execFileAsync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', scratch], {
    cwd: root,
    timeout: 60_000,
  });
  const [report] = JSON.parse(stdout) as [{ filename: string; files: { path: string }[] }];
  packed = report.files.map((file) => file.path).sort();

  // A consumer project with the tarball unpacked into node_modules by hand (no registry, no network) and the
  // package's dependencies linked from this checkout's node_modules, as `npm install <tgz>` would provide them.
  consumer = join(scratch, 'consumer');
  const installed = join(consumer, 'node_modules', manifest.name);
  mkdirSync(installed, { recursive: true });
  execFileSync('tar', ['-xzf', join(scratch, report.filename), '-C', installed, '--strip-components=1']);
  for (const dependency of [...Object.keys(manifest.dependencies), '@types/node']) {
    mkdirSync(join(consumer, 'node_modules', dependency, '..'), { recursive: true });
    symlinkSync(join(root, 'node_modules', dependency), join(consumer, 'node_modules', dependency));
  }
  writeFileSync(join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', private: true }));
}, 120_000);

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('npm pack', () => {
  it('holds the built entry points, their declarations, the bins, the docs and the licence, and nothing else', () => {
    const allowed = [/^package\.json$/, /^README\.md$/, /^LICENSE$/, /^docs\/[\w-]+\.md$/, /^dist\/[\w/-]+\.(js|d\.ts)$/];
    const unexpected = packed.filter((path) => !allowed.some((pattern) => pattern.test(path)));
    expect(unexpected, 'files that should not be published (source maps, sources, tests...)').toEqual([]);
    // The watchdog execs Node on the reaper by its path inside the installed package.
    const required = ['package.json', 'README.md', 'LICENSE', 'docs/api.md', 'dist/run/reaper.js'];
    for (const target of Object.values(manifest.exports)) {
      if (typeof target === 'string') continue;
      required.push(target.types!.slice(2), target.default!.slice(2));
    }
    for (const bin of Object.values(manifest.bin)) required.push(bin.slice(2));
    for (const path of required) expect(packed, path).toContain(path);
  });

  it('declares a default condition on every entry point, so require() finds it', () => {
    for (const [subpath, target] of Object.entries(manifest.exports)) {
      if (subpath === './package.json') continue;
      expect(target, subpath).toMatchObject({ types: expect.any(String), default: expect.any(String) });
    }
  });
});

describe('a consumer project that installed the tarball', () => {
  it.each(entryPoints)('imports %s from an ES module', async (entry) => {
    const script = `import * as m from '${entry}'; console.log(typeof m.${KEY_EXPORT[entry]});`;
    const { stdout } = await execFileAsync(process.execPath, ['--input-type=module', '--eval', script], { cwd: consumer });
    expect(stdout.trim()).toBe('function');
  });

  it.each(entryPoints)('requires %s from CommonJS', async (entry) => {
    const script = `const m = require('${entry}'); console.log(typeof m.${KEY_EXPORT[entry]});`;
    const { stdout, stderr } = await execFileAsync(process.execPath, ['--input-type=commonjs', '--eval', script], { cwd: consumer });
    expect(stdout.trim()).toBe('function');
    expect(stderr).toBe('');
  });

  it('typechecks a TypeScript consumer of every entry point (NodeNext)', async () => {
    writeFileSync(
      join(consumer, 'index.ts'),
      [
        "import { spawnRun, type Outcome } from 'subvisor';",
        "import { decode } from 'subvisor/wire';",
        "import { fakeChild } from 'subvisor/testing';",
        "import { asAgent, collect, type AgentEvent } from 'subvisor/agent';",
        "import { serveAgent, type Agent } from 'subvisor/child';",
        'export const toy: Agent = { async *invoke(): AsyncIterable<AgentEvent> { yield { type: \'completed\' }; } };',
        'export const serve = (): Promise<unknown> => serveAgent(toy, { exitProcess: false });',
        "export const ask = (): Promise<{ text: string }> => collect(asAgent(fakeChild('echo')).invoke({ session: 's' }, { text: 'hi' }));",
        'export async function answer(): Promise<string | undefined> {',
        "  const outcome: Outcome = await spawnRun({ ...fakeChild('echo'), task: 'hi' }).outcome;",
        "  return decode('{}', 'event').ok ? undefined : outcome.finalText;",
        '}',
      ].join('\n'),
    );
    writeFileSync(
      join(consumer, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', strict: true, noEmit: true, skipLibCheck: true, types: ['node'] },
        files: ['index.ts'],
      }),
    );
    // An ESM consumer (the file is index.ts in a "type": "module" project).
    writeFileSync(join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
    try {
      await execFileAsync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', consumer], {
        cwd: consumer,
        timeout: 120_000,
      });
    } finally {
      writeFileSync(join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', private: true }));
    }
  }, 150_000);

  it.each(Object.entries(manifest.bin))('runs the bin %s', async (_name, path) => {
    const installed = join(consumer, 'node_modules', manifest.name, path);
    expect(readFileSync(installed, 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
    const { stdout } = await execFileAsync(process.execPath, [installed, '--help'], { cwd: consumer });
    expect(stdout).toMatch(/usage/i);
  });

  it('reads its own version through the package.json export', async () => {
    const script = `console.log(require('${manifest.name}/package.json').version);`;
    const { stdout } = await execFileAsync(process.execPath, ['--eval', script], { cwd: consumer });
    expect(stdout.trim()).toBe(manifest.version);
    expect(readdirSync(join(consumer, 'node_modules', manifest.name)).sort()).toEqual(
      ['LICENSE', 'README.md', 'dist', 'docs', 'package.json'].sort(),
    );
  });
});
