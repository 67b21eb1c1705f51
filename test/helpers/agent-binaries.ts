// Where the pinned real agent binaries are (installed into .agents/ by `npm run agents:install`), and whether each is.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The folder `npm run agents:install` fills (gitignored). */
export const AGENTS_DIR = join(ROOT, '.agents');

/** The command that installs the agents, named by every test that skips without them. */
export const AGENTS_INSTALL = 'npm run agents:install';

export type AgentBinaryName = 'claude' | 'codex' | 'gemini';

/** Each agent's npm package (its version is the manifest's pin). */
const PACKAGES: Record<AgentBinaryName, string> = {
  claude: '@anthropic-ai/claude-code',
  codex: '@openai/codex',
  gemini: '@google/gemini-cli',
};

/** The pinned version of each agent, from agents/package.json (the one manifest). */
export function pinnedVersion(name: AgentBinaryName): string {
  const manifest = JSON.parse(readFileSync(join(ROOT, 'agents', 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  return manifest.dependencies[PACKAGES[name]]!;
}

/**
 * The installed binary of `name`, or undefined when it is not installed. `claude` is Claude Code's native program
 * (the install links it over the npm placeholder); `codex` is Codex's Node launcher, which execs its native binary;
 * `gemini` is Gemini CLI's Node script (it relaunches itself as a child node process).
 */
export function agentBinary(name: AgentBinaryName): string | undefined {
  const path = join(AGENTS_DIR, 'node_modules', '.bin', name);
  // The install writes this stamp last, after each binary answered --version with its pinned version.
  return existsSync(join(AGENTS_DIR, '.installed')) && existsSync(path) ? path : undefined;
}
