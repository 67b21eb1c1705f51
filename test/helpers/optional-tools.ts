// The programs beyond Node that some tests use: whether each is on PATH (or, for the real agents, installed in
// .agents/), and what the suite says once when some are not.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { AGENTS_INSTALL, agentBinary, type AgentBinaryName } from './agent-binaries.js';

/** Each program, what is skipped without it, its Debian package, and (when not found on PATH) how to tell it is there. */
const OPTIONAL_TOOLS: Record<string, { skipped: string; debianPackage: string; present?: () => boolean }> = {
  'redis-server': {
    skipped:
      'the queue tests (test/process/queue/ and the Redis part of test/process/cli/cli-queue.test.ts)',
    debianPackage: 'redis-server',
  },
  jq: { skipped: "the docs' shell examples that pipe into jq (test/process/project/docs.test.ts)", debianPackage: 'jq' },
  chromium: {
    skipped: 'the dashboard test in a real browser (test/process/dashboard/dashboard-browser.test.ts)',
    debianPackage: 'chromium',
    present: () => existsSync(CHROMIUM),
  },
};

/** Debian's Chromium, which the browser test drives with playwright-core (it downloads no browser of its own). */
export const CHROMIUM = '/usr/bin/chromium';

/**
 * How Chromium is started for the tests: headless, as root (no sandbox), and with nothing of its own on the
 * network (a closed network refuses its background connections, many at a time).
 */
export const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Whether `program` is on PATH (it answers `--version`). */
export function onPath(program: string): boolean {
  try {
    execFileSync(program, ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** The real agents some tests drive against fakeModel (the full matrix is test/agents/, `npm run test:agents`). */
const AGENT_BINARIES: AgentBinaryName[] = ['claude', 'codex', 'gemini'];

/**
 * What test/global-setup.ts (and test/agents/'s setup) says once on a machine without some of the programs: what is
 * skipped, and the command that installs them (README.md says the same). Undefined when every one is there.
 */
export function missingToolsNote(): string | undefined {
  const missing = Object.keys(OPTIONAL_TOOLS).filter((program) => !(OPTIONAL_TOOLS[program]!.present ?? (() => onPath(program)))());
  const agents = AGENT_BINARIES.filter((name) => agentBinary(name) === undefined);
  const notes: string[] = [];
  if (missing.length > 0) {
    const tools = missing.map((program) => OPTIONAL_TOOLS[program]!);
    notes.push(
      `${missing.join(' and ')} ${missing.length === 1 ? 'is' : 'are'} not on PATH, so the suite skips ${tools.map((tool) => tool.skipped).join(', and ')}. ` +
        `To run them: sudo apt-get install ${tools.map((tool) => tool.debianPackage).join(' ')} (Debian, Ubuntu).`,
    );
  }
  if (agents.length > 0) {
    notes.push(
      `The pinned agent binaries (${agents.join(', ')}) are not installed in .agents/, so the suite skips the tests that drive ` +
        `the real agents against fakeModel (test/agents/, and their smoke tests in test/process/). To run them: ${AGENTS_INSTALL}.`,
    );
  }
  return notes.length === 0 ? undefined : notes.join('\n');
}
