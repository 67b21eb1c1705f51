#!/usr/bin/env node
// `npm run agents:install`: installs the agent binaries pinned in agents/package.json (+ its lockfile) into .agents/
// at the repository root (gitignored, about 1.2 GB), runs the one install step Claude Code needs, and checks that each
// binary answers with its pinned version. Needs the npm registry and nothing else; a second run with nothing changed
// returns at once.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const manifestDir = dirname(fileURLToPath(import.meta.url));
const target = join(manifestDir, '..', '.agents');
const modules = join(target, 'node_modules');
const stamp = join(target, '.installed');

/** The command-line programs the tests run, each with the version the manifest pins and the path that runs it. */
const pinned = JSON.parse(readFileSync(join(manifestDir, 'package.json'), 'utf8')).dependencies;
const BINARIES = [
  // The platform binary itself (what the postinstall below links into bin/claude.exe): no wrapper, no Node.
  { name: 'claude', pkg: '@anthropic-ai/claude-code', path: join(modules, '.bin', 'claude') },
  { name: 'codex', pkg: '@openai/codex', path: join(modules, '.bin', 'codex') },
  { name: 'gemini', pkg: '@google/gemini-cli', path: join(modules, '.bin', 'gemini') },
];

const lock = readFileSync(join(manifestDir, 'package-lock.json'));
const digest = createHash('sha256').update(readFileSync(join(manifestDir, 'package.json'))).update(lock).digest('hex');

function versionOf(path) {
  try {
    return execFileSync(path, ['--version'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000, env: quietEnv() });
  } catch (error) {
    return `failed: ${String(error.stderr || error.message).trim().split('\n')[0]}`;
  }
}

/** `--version` with no update check, telemetry or config of the user's (a fresh HOME would be created by each agent). */
function quietEnv() {
  return {
    ...process.env,
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_AUTOUPDATER: '1',
    GEMINI_CLI_NO_RELAUNCH: 'true',
  };
}

function check() {
  const problems = [];
  for (const binary of BINARIES) {
    const answer = versionOf(binary.path);
    if (!answer.includes(pinned[binary.pkg])) problems.push(`${binary.name} (${binary.path}) answered --version with: ${answer.trim()}`);
  }
  return problems;
}

if (existsSync(stamp) && readFileSync(stamp, 'utf8') === digest && check().length === 0) {
  console.log(`agents already installed in ${target}`);
  process.exit(0);
}

mkdirSync(target, { recursive: true });
copyFileSync(join(manifestDir, 'package.json'), join(target, 'package.json'));
copyFileSync(join(manifestDir, 'package-lock.json'), join(target, 'package-lock.json'));
// No package's install script runs (node-pty would try to compile with node-gyp; Gemini CLI uses its prebuilt
// @lydell/node-pty instead), except Claude Code's own, below, run on purpose.
execFileSync('npm', ['ci', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: target, stdio: 'inherit' });
// Claude Code's postinstall links its platform package's native binary over the bin/claude.exe placeholder, so
// .bin/claude is the native program (no Node process stays between the parent and the agent).
execFileSync(process.execPath, [join(modules, '@anthropic-ai', 'claude-code', 'install.cjs')], {
  cwd: join(modules, '@anthropic-ai', 'claude-code'),
  stdio: 'inherit',
});

const problems = check();
if (problems.length > 0) {
  console.error(`agents:install: ${problems.join('\n')}`);
  process.exit(1);
}
writeFileSync(stamp, digest);
for (const binary of BINARIES) console.log(`${binary.name} ${pinned[binary.pkg]}: ${binary.path}`);
