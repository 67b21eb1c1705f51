// What points each real agent at a fakeModel: its environment (base URL, a key, update checks and telemetry off,
// the caller's own provider variables removed) and its config files, under a private HOME.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closestName } from '../../text/closest-name.js';
import type { AgentSetup, AgentSetupOptions, FakeModelAgent } from './types.js';

/** The key every agent sends; fakeModel accepts any. */
const FAKE_KEY = 'fake-model-key';

/** The model name Codex asks for (a name outside its catalogue: Codex warns once that it has no metadata for it). */
const CODEX_MODEL = 'fake-model';

/**
 * Every agent: its config, caches and temp files under the private HOME, not the caller's XDG folders or /tmp
 * (Claude Code 2.1.328 puts a socket per process in `$XDG_RUNTIME_DIR/cc-socks/` or `$TMPDIR/cc-socks/` and session
 * files in `$TMPDIR/claude-<uid>/`, and leaves them when it is killed).
 */
function homeEnv(home: string): Record<string, string> {
  const tmp = join(home, 'tmp');
  const runtime = join(home, 'run');
  mkdirSync(tmp, { recursive: true, mode: 0o700 });
  mkdirSync(runtime, { recursive: true, mode: 0o700 });
  return {
    HOME: home,
    TMPDIR: tmp,
    XDG_RUNTIME_DIR: runtime,
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_CACHE_HOME: join(home, '.cache'),
    XDG_DATA_HOME: join(home, '.local', 'share'),
    XDG_STATE_HOME: join(home, '.local', 'state'),
  };
}

interface Written {
  env: Record<string, string | undefined>;
  files: string[];
}

const AGENTS: Record<FakeModelAgent, (url: string, home: string) => Written> = {
  'claude-code': (url) => ({
    env: {
      ANTHROPIC_BASE_URL: url,
      ANTHROPIC_API_KEY: FAKE_KEY,
      // The caller's own credentials and providers would win over the base URL or be sent to it.
      ANTHROPIC_AUTH_TOKEN: undefined,
      CLAUDE_CODE_OAUTH_TOKEN: undefined,
      CLAUDE_CODE_USE_BEDROCK: undefined,
      CLAUDE_CODE_USE_VERTEX: undefined,
      CLAUDE_CODE_USE_FOUNDRY: undefined,
      CLAUDE_CONFIG_DIR: undefined,
      // Set inside a Claude Code session: a nested CLI would think it runs as a subagent.
      CLAUDECODE: undefined,
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      // Its own temp folder wins over TMPDIR: the caller's would put files outside the private HOME.
      CLAUDE_CODE_TMPDIR: undefined,
      DISABLE_AUTOUPDATER: '1',
      DISABLE_TELEMETRY: '1',
      DISABLE_ERROR_REPORTING: '1',
    },
    files: [],
  }),
  codex: (url, home) => {
    const codexHome = join(home, '.codex');
    mkdirSync(codexHome, { recursive: true });
    const config = join(codexHome, 'config.toml');
    writeFileSync(
      config,
      [
        `model = "${CODEX_MODEL}"`,
        'model_provider = "fake-model"',
        'check_for_update_on_startup = false',
        '',
        '[analytics]',
        'enabled = false',
        '',
        '[feedback]',
        'enabled = false',
        '',
        // Its sandbox makes /tmp writable and leaves empty .git, .codex, .agents, .aws mount points in each writable
        // root (0.169); TMPDIR (in the private HOME) stays writable.
        '[sandbox_workspace_write]',
        'exclude_slash_tmp = true',
        '',
        '[model_providers.fake-model]',
        'name = "fakeModel"',
        `base_url = "${url}/v1"`,
        'env_key = "FAKE_MODEL_API_KEY"',
        'wire_api = "responses"',
        '',
      ].join('\n'),
    );
    return {
      env: {
        CODEX_HOME: codexHome,
        FAKE_MODEL_API_KEY: FAKE_KEY,
        OPENAI_API_KEY: undefined,
        OPENAI_BASE_URL: undefined,
        CODEX_API_KEY: undefined,
      },
      files: [config],
    };
  },
  gemini: (url, home) => {
    const settingsDir = join(home, '.gemini');
    mkdirSync(settingsDir, { recursive: true });
    const settings = join(settingsDir, 'settings.json');
    const content = {
      general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
      privacy: { usageStatisticsEnabled: false },
      telemetry: { enabled: false },
    };
    writeFileSync(settings, `${JSON.stringify(content, null, 2)}\n`);
    return {
      env: {
        // A base URL makes Gemini CLI authenticate as a "gateway" with GEMINI_API_KEY.
        GOOGLE_GEMINI_BASE_URL: url,
        GEMINI_API_KEY: FAKE_KEY,
        // Each of these would choose another authentication (Vertex AI, Google login, Cloud Shell) first.
        GOOGLE_GENAI_USE_VERTEXAI: undefined,
        GOOGLE_GENAI_USE_GCA: undefined,
        GOOGLE_API_KEY: undefined,
        GOOGLE_CLOUD_PROJECT: undefined,
        CLOUD_SHELL: undefined,
        GEMINI_CLI_HOME: undefined,
        GEMINI_TELEMETRY_ENABLED: 'false',
      },
      files: [settings],
    };
  },
};

/** Writes `agent`'s config files under a private HOME and returns the environment that points it at `url`. */
export function agentSetup(agent: FakeModelAgent, url: string, options: AgentSetupOptions = {}): AgentSetup {
  const write = AGENTS[agent];
  if (write === undefined) {
    throw new TypeError(`fakeModel.setup: ${String(agent)} is not an agent fakeModel sets up; did you mean ${closestName(String(agent), Object.keys(AGENTS))}?`);
  }
  for (const key of Object.keys(options)) {
    if (key !== 'home' && key !== 'env') throw new TypeError(`fakeModel.setup: options.${key} is not an option; did you mean ${closestName(key, ['home', 'env'])}?`);
  }
  const owned = options.home === undefined;
  const home = options.home ?? mkdtempSync(join(tmpdir(), `fake-model-${agent}-home-`));
  let written: Written;
  let env: Record<string, string>;
  try {
    env = homeEnv(home);
    written = write(url, home);
  } catch (error) {
    if (owned) rmSync(home, { recursive: true, force: true });
    throw error;
  }
  let cleaned = false;
  return {
    agent,
    env: { ...env, ...written.env, ...options.env },
    home,
    files: written.files,
    cleanup() {
      if (cleaned || !owned) return;
      cleaned = true;
      // An agent may still be writing its session files while it is killed: retry a busy directory.
      rmSync(home, { recursive: true, force: true, maxRetries: 3 });
    },
  };
}
