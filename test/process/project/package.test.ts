// The published package: `npm pack` holds exactly the files a consumer needs, `npm publish` has nothing to correct,
// installing the tarball runs (and warns of) none of subvisor's own scripts, and a consumer project that installs
// it (offline, unpacked by hand; with npm when the registry answers) imports every entry point from ESM, CommonJS and
// TypeScript (5.2 and the current one), runs every bin and the docs' toy agent; without the queue's optional peers
// (BullMQ, ioredis) everything but subvisor/queue works and subvisor/queue says what to install; with them it runs.
import { execFile, execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { documentedAgentEvents } from '../../helpers/documented-events.js';
import { haveRedis, startRedis } from '../../helpers/redis-server.js';

const execFileAsync = promisify(execFile);
const root = fileURLToPath(new URL('../../..', import.meta.url));
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  name: string;
  version: string;
  exports: Record<string, string | { types?: string; default?: string }>;
  bin: Record<string, string>;
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
};
/** The queue's optional peers, and what subvisor/queue tells a project that lacks them. */
const QUEUE_PEERS = ['bullmq', 'ioredis'];
const INSTALL_PEERS = 'npm install bullmq ioredis';
/** Where a manifest path points inside the package (`./dist/x.js` and `dist/x.js` alike). */
const inPackage = (path: string): string => path.replace(/^\.\//, '');
/** The scripts npm runs when a project installs a package, and names in its install-scripts warning. */
const INSTALL_SCRIPTS = ['preinstall', 'install', 'postinstall', 'prepare'];
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
/** The same installed package with its dependencies but without the optional peers. */
let bare: string;
let packed: string[];
let tarball: string;

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'subvisor-pack-'));
  // --ignore-scripts: pack the dist/ this suite was started with (the prepack script would rebuild it under
  // the feet of the other test files).
  const { stdout } = await execFileAsync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', scratch], {
    cwd: root,
    timeout: 60_000,
  });
  const [report] = JSON.parse(stdout) as [{ filename: string; files: { path: string }[] }];
  packed = report.files.map((file) => file.path).sort();
  tarball = join(scratch, report.filename);

  // A consumer project with the tarball unpacked into node_modules by hand (no registry, no network) and the
  // package's dependencies linked from this checkout's node_modules, as `npm install <tgz>` would provide them.
  consumer = join(scratch, 'consumer');
  const installed = join(consumer, 'node_modules', manifest.name);
  mkdirSync(installed, { recursive: true });
  execFileSync('tar', ['-xzf', tarball, '-C', installed, '--strip-components=1']);
  // This consumer also installed the queue's optional peers; `bare` did not.
  bare = join(scratch, 'bare');
  for (const [project, extra] of [[consumer, QUEUE_PEERS], [bare, []]] as const) {
    const installedHere = join(project, 'node_modules', manifest.name);
    mkdirSync(installedHere, { recursive: true });
    if (project === bare) execFileSync('tar', ['-xzf', tarball, '-C', installedHere, '--strip-components=1']);
    for (const dependency of [...Object.keys(manifest.dependencies), '@types/node', ...extra]) {
      mkdirSync(join(project, 'node_modules', dependency, '..'), { recursive: true });
      symlinkSync(join(root, 'node_modules', dependency), join(project, 'node_modules', dependency));
    }
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true }));
  }
}, 120_000);

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('npm pack', () => {
  it('holds the built entry points, their declarations, the bins, the docs and the licence, and nothing else', () => {
    const allowed = [
      /^package\.json$/,
      /^README\.md$/,
      /^LICENSE$/,
      /^docs\/[\w-]+\.md$/,
      // The pictures the docs show: the dashboard's screenshot, the benchmark table's charts.
      /^docs\/[\w-]+\.png$/,
      /^docs\/performance\/[\w-]+\.svg$/,
      /^dist\/[\w/-]+\.(js|d\.ts)$/,
      // The dashboard's page, served as it is written.
      /^dist\/dashboard\/page\/[\w-]+\.(html|css)$/,
    ];
    const unexpected = packed.filter((path) => !allowed.some((pattern) => pattern.test(path)));
    expect(unexpected, 'files that should not be published (source maps, sources, tests...)').toEqual([]);
    // The watchdog execs Node on the reaper by its path inside the installed package.
    // The dashboard's server reads its page from beside the bundles.
    const required = ['package.json', 'README.md', 'LICENSE', 'docs/api.md', 'dist/process/reaper.js', ...['index.html', 'app.js', 'app.css'].map((file) => `dist/dashboard/page/${file}`)];
    for (const target of Object.values(manifest.exports)) {
      if (typeof target === 'string') continue;
      required.push(inPackage(target.types!), inPackage(target.default!));
    }
    for (const bin of Object.values(manifest.bin)) required.push(inPackage(bin));
    for (const path of required) expect(packed, path).toContain(path);
  });

  it('carries no script that npm runs, or warns about, when a project installs it (the build is prepack)', () => {
    const packedManifest = JSON.parse(
      execFileSync('tar', ['-xzOf', tarball, 'package/package.json'], { encoding: 'utf8' }),
    ) as { scripts?: Record<string, string> };
    expect(Object.keys(packedManifest.scripts ?? {}).filter((name) => INSTALL_SCRIPTS.includes(name))).toEqual([]);
    expect(packedManifest.scripts?.['prepack']).toMatch(/tsup/);
  });

  it('npm publish --dry-run has nothing to correct or warn about in the manifest', async () => {
    const { stderr } = await execFileAsync('npm', ['publish', '--dry-run', '--offline', '--ignore-scripts'], { cwd: root, timeout: 60_000 });
    // The one warning left is about this machine, not the package: nobody is logged in to the registry here.
    const warnings = stderr.split('\n').filter((line) => /npm warn/i.test(line) && !/requires you to be logged in/.test(line));
    expect(warnings).toEqual([]);
  });

  it('declares a default condition on every entry point, so require() finds it', () => {
    for (const [subpath, target] of Object.entries(manifest.exports)) {
      if (subpath === './package.json') continue;
      expect(target, subpath).toMatchObject({ types: expect.any(String), default: expect.any(String) });
    }
  });
});

describe("the queue's dependencies", () => {
  it('BullMQ and ioredis are optional peer dependencies (npm does not install them with subvisor), and dev dependencies here', () => {
    const all = manifest as unknown as { devDependencies: Record<string, string> };
    for (const peer of QUEUE_PEERS) {
      expect(manifest.dependencies[peer], peer).toBeUndefined();
      expect(manifest.peerDependencies[peer], peer).toBeDefined();
      expect(manifest.peerDependenciesMeta[peer], peer).toEqual({ optional: true });
      expect(all.devDependencies[peer], peer).toBe(manifest.peerDependencies[peer]);
    }
  });
});

describe('a consumer project without BullMQ and ioredis', () => {
  it.each(entryPoints.filter((entry) => entry !== 'subvisor/queue'))('imports %s from ESM and CommonJS', async (entry) => {
    for (const [type, script] of [
      ['module', `import * as m from '${entry}'; console.log(typeof m.${KEY_EXPORT[entry]});`],
      ['commonjs', `const m = require('${entry}'); console.log(typeof m.${KEY_EXPORT[entry]});`],
    ] as const) {
      const { stdout } = await execFileAsync(process.execPath, [`--input-type=${type}`, '--eval', script], { cwd: bare });
      expect(stdout.trim(), `${entry} (${type})`).toBe('function');
    }
  });

  it('gets an error naming the install command from subvisor/queue, from ESM and CommonJS', async () => {
    for (const [type, script] of [
      ['module', `await import('subvisor/queue').then(() => console.log('loaded'), (error) => console.log(error.message));`],
      ['commonjs', `try { require('subvisor/queue'); console.log('loaded'); } catch (error) { console.log(error.message); }`],
    ] as const) {
      const { stdout } = await execFileAsync(process.execPath, [`--input-type=${type}`, '--eval', script], { cwd: bare });
      expect(stdout.trim(), type).toMatch(/^subvisor\/queue needs BullMQ and ioredis, .*\(bullmq is missing\): npm install bullmq ioredis$/);
      expect(stdout, type).toContain(INSTALL_PEERS);
    }
  });

  it('runs supervise: a local run works, and a queue command says what to install', async () => {
    const supervise = join(bare, 'node_modules', manifest.name, inPackage(manifest.bin['supervise']!));
    const fake = join(bare, 'node_modules', manifest.name, inPackage(manifest.bin['subvisor-fake-child']!));
    const local = await execFileAsync(process.execPath, [supervise, '--quiet', '--task', 'hello', '--', process.execPath, fake, 'echo'], { cwd: bare, timeout: 60_000 });
    expect(local.stdout.trim()).toBe('hello');
    const remote = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = execFile(process.execPath, [supervise, '--redis', 'redis://127.0.0.1:1', '--queue', 'q', '--profile', 'p', '--task', 't'], { cwd: bare, timeout: 60_000 }, (_error, _stdout, stderr) =>
        resolve({ code: child.exitCode, stderr }),
      );
    });
    expect(remote.code).not.toBe(0);
    expect(remote.stderr).toContain(INSTALL_PEERS);
  });
});

describe.skipIf(!haveRedis())('a consumer project with BullMQ and ioredis (needs redis-server)', () => {
  it('runs a task through subvisor/queue: a producer, a worker, the answer', async () => {
    const redis = await startRedis();
    try {
      const fake = join(consumer, 'node_modules', manifest.name, inPackage(manifest.bin['subvisor-fake-child']!));
      const script = `
        import { createQueueSupervisor, startWorker } from 'subvisor/queue';
        const address = { connection: ${JSON.stringify(redis.url)}, queue: 'package-test' };
        const worker = startWorker({ ...address, profiles: { echo: { command: process.execPath, args: [${JSON.stringify(fake)}, 'echo'] } } });
        const qs = createQueueSupervisor(address);
        const outcome = await qs.spawn({ profile: 'echo', task: 'through the queue', timeoutMs: 60000 }).outcome;
        await qs.close();
        await worker.close();
        console.log(outcome.status, outcome.finalText ?? outcome.error);
      `;
      // A file, not --eval: the worker's run host thread inherits the process's execArgv, and --input-type with it.
      writeFileSync(join(consumer, 'queue-round-trip.mjs'), script);
      const { stdout } = await execFileAsync(process.execPath, ['queue-round-trip.mjs'], { cwd: consumer, timeout: 90_000 });
      expect(stdout.trim()).toBe('done through the queue');
    } finally {
      await redis.dispose();
    }
  }, 120_000);
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

  // fixtures/consumer/index.ts also holds the type-level checks of the Agent Handler events (@ts-expect-error).
  it.each([
    ['5.2 (the oldest the declarations support)', 'typescript-5.2'],
    ['of this checkout', 'typescript'],
  ])('typechecks a TypeScript consumer of every entry point with TypeScript %s, skipLibCheck off', async (_version, compiler) => {
    // An ES module project of its own, below the consumer (whose node_modules it resolves from).
    const project = join(consumer, `ts-${compiler}`);
    mkdirSync(project);
    // docs/agent.md's event shapes must compile as AgentEvents too, each exactly (no extra field).
    const documented = `\nexport const documented: AgentEvent[] = [\n  ${documentedAgentEvents().join(',\n  ')},\n];\n`;
    writeFileSync(join(project, 'index.ts'), readFileSync(join(root, 'fixtures', 'consumer', 'index.ts'), 'utf8') + documented);
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'ts-consumer', private: true, type: 'module' }));
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          target: 'ES2022',
          lib: ['ES2022', 'ESNext.Disposable'],
          strict: true,
          noEmit: true,
          skipLibCheck: false,
          types: ['node'],
        },
        files: ['index.ts'],
      }),
    );
    await execFileAsync(process.execPath, [join(root, 'node_modules', compiler, 'bin', 'tsc'), '-p', project], { cwd: project, timeout: 120_000 });
  }, 150_000);

  it.each(Object.entries(manifest.bin))('runs the bin %s', async (_name, path) => {
    const installed = join(consumer, 'node_modules', manifest.name, path);
    expect(readFileSync(installed, 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
    const { stdout } = await execFileAsync(process.execPath, [installed, '--help'], { cwd: consumer });
    expect(stdout).toMatch(/usage/i);
  });

  it("runs docs/agent.md's toy agent, saved in the project, under its supervise", async () => {
    copyFileSync(join(root, 'examples', 'children', 'toy-agent.mjs'), join(consumer, 'toy-agent.mjs'));
    const supervise = join(consumer, 'node_modules', manifest.name, inPackage(manifest.bin['supervise']!));
    const { stdout } = await execFileAsync(process.execPath, [supervise, '--task', 'count these words', '--', process.execPath, 'toy-agent.mjs'], {
      cwd: consumer,
      timeout: 60_000,
    });
    expect(stdout).toMatch(/^Session [\w-]+: 3 words\.$/);
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

describe('npm install of the tarball in a new project (its dependencies come from the npm registry: skipped without it)', () => {
  it('installs with no warning that names subvisor or its build, and the installed supervise runs', async (context) => {
    const app = join(scratch, 'app');
    mkdirSync(app);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true }));
    const args = ['install', tarball, '--no-audit', '--no-fund', '--prefer-offline', '--fetch-retries=0', '--fetch-timeout=30000'];
    const install = await new Promise<{ code: number | null; output: string }>((resolve) => {
      const child = execFile('npm', args, { cwd: app, timeout: 120_000 }, (_error, stdout, stderr) =>
        resolve({ code: child.exitCode, output: `${stdout}\n${stderr}` }),
      );
    });
    if (install.code !== 0 && /ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|ENOTCACHED/.test(install.output)) {
      context.skip('the npm registry did not answer, so the dependencies cannot be installed');
    }
    expect(install.code, install.output).toBe(0);
    const warnings = install.output.split('\n').filter((line) => /npm warn/i.test(line));
    expect(warnings.filter((line) => line.includes(manifest.name) || line.includes('tsup'))).toEqual([]);
    // No dependency brings an install script (BullMQ's msgpackr-extract did, before BullMQ became an optional peer).
    expect(install.output.split('\n').filter((line) => /install[- ]scripts?|node-gyp/i.test(line))).toEqual([]);
    for (const peer of QUEUE_PEERS) expect(existsSync(join(app, 'node_modules', peer)), `${peer} installed`).toBe(false);
    const { stdout } = await execFileAsync(join(app, 'node_modules', '.bin', 'supervise'), ['--version'], { cwd: app });
    expect(stdout.trim()).toContain(manifest.version);
  }, 150_000);
});
