// The built-in scenarios of the fake fuseraft, by mode and name.
import type { FuseraftBridgeScenarioName, FuseraftReplScenarioName, FuseraftScenario, FuseraftTurn } from './scenario.js';

const ECHO_TURN: FuseraftTurn = { steps: [{ token: { echo: true } }] };

/** A turn of ~30 s that never finishes early: the target of interrupt and kill tests. */
const SLOW_TURN: FuseraftTurn = { steps: [{ token: 'Working on it. ' }, { pause: 30_000, join: false }, { token: 'Done.' }] };

/**
 * What each repl scenario does (`fuseraft repl --vscode --no-banner`; every turn answers the message that
 * started it, after `ready` and until stdin closes: then `session_end`, exit 0):
 * - `chat` (default): each turn thinks, calls `read_file` (`tool_call`, `tool_result`), then streams an answer
 *   echoing the message in 3 tokens; `message_end` with usage. About 0.1 s.
 * - `echo`: each turn answers the message in one token.
 * - `interjections`: turn 1 streams a token, then waits (up to 30 s) for a mid-turn `user_input`, which joins
 *   (`interjection {status: joined}`); streams again, then waits for another mid-turn message, which is carried
 *   (`interjection {status: carried}` before `message_end`): turn 2 starts by itself (`turn_start {text}`) and
 *   echoes it. Later turns echo.
 * - `approvals`: turn 1 asks four approvals in order: `shell_command`, `tool_action`, `file_write`, and a kind
 *   the seed does not list (`network_access`); each approved one runs its tool (`tool_result ok`), each
 *   denied one gets a failed `tool_result`; the answer lists the decisions. Later turns echo.
 * - `questions`: turn 1 asks a `question` (only with FUSERAFT_VSCODE_QUESTIONS=1; otherwise skipped) and
 *   answers with the answer. Later turns echo.
 * - `slow`: every turn takes ~30 s (the target of `interrupt`: `cancelled`, no `message_end`).
 * - `error-turn`: turn 1 streams a little, then `error {text}` and no `message_end`; later turns echo.
 * - `big-output`: turn 1's tool returns 150 000 characters: `tool_result.output` is capped at 100 000.
 * - `retrying`: turn 1 sends `retrying {attempt: 1, max: 2}` mid-stream, then completes.
 * - `wrong-version`: `ready.protocolVersion` is 2; otherwise `echo`.
 * - `noise`: non-JSON lines before `ready` and in every turn, an unknown event type and a `token` with unknown
 *   fields; otherwise `chat`.
 * - `crash`: turn 1 streams a little, then exits 3 (no `message_end`, no `session_end`).
 * - `stubborn`: ignores `interrupt`, SIGINT and SIGTERM; turn 1 spawns two grandchildren ignoring SIGTERM and
 *   SIGINT (one in its process group, one in its own session), then takes 30 s: only SIGKILL ends it.
 */
const REPL: Readonly<Record<FuseraftReplScenarioName, FuseraftScenario>> = {
  chat: {
    name: 'chat',
    turns: [
      {
        steps: [
          { thinking: 'The user wants an answer. Reading first.', chunks: 2 },
          { tool: 'read_file', args: { path: 'README.md' }, output: '# subvisor\nSpawn and supervise child AI agents.', durationMs: 10 },
          { token: { echo: true, prefix: 'You asked: ' }, chunks: 3, ms: 30 },
        ],
      },
    ],
  },
  echo: { name: 'echo', turns: [ECHO_TURN] },
  interjections: {
    name: 'interjections',
    turns: [
      {
        steps: [
          { token: 'Starting. ' },
          { pause: 30_000, untilInput: true },
          { token: 'Joined what you said. ' },
          { pause: 30_000, untilInput: true, join: false },
          { token: { echo: true, prefix: 'Heard: ' } },
        ],
      },
      ECHO_TURN,
    ],
  },
  approvals: {
    name: 'approvals',
    turns: [
      {
        steps: [
          { token: 'I need a few approvals. ' },
          { approval: { kind: 'shell_command', command: 'npm test' } },
          { approval: { kind: 'tool_action', plugin: 'Git', action: 'git_commit', detail: 'commit -m "fix"' } },
          { approval: { kind: 'file_write', plugin: 'FileSystem', action: 'write_file', path: 'notes.txt', oldContent: 'old\n', newContent: 'new\n' } },
          { approval: { kind: 'network_access', host: 'example.com', port: 443 } },
          { token: { echo: true, prefix: 'Decisions: ' } },
        ],
      },
      ECHO_TURN,
    ],
  },
  questions: {
    name: 'questions',
    turns: [
      {
        steps: [
          { question: { question: 'Which branch?', options: ['main', 'dev'], allowOther: true } },
          { token: { echo: true, prefix: 'Going with: ' } },
        ],
      },
      ECHO_TURN,
    ],
  },
  slow: { name: 'slow', turns: [SLOW_TURN] },
  'error-turn': {
    name: 'error-turn',
    turns: [{ steps: [{ token: 'Trying. ' }], error: 'Provider error: 503 Service Unavailable' }, ECHO_TURN],
  },
  'big-output': {
    name: 'big-output',
    turns: [
      {
        steps: [
          { tool: 'shell_run', args: { command: 'cat big.log' }, output: { repeat: 'log line 0123456789\n', bytes: 150_000 } },
          { token: 'Read the log.' },
        ],
      },
    ],
  },
  retrying: {
    name: 'retrying',
    turns: [{ steps: [{ token: 'Part one. ' }, { retrying: { attempt: 1, max: 2 } }, { token: { echo: true, prefix: 'After a retry: ' } }] }],
  },
  'wrong-version': { name: 'wrong-version', protocolVersion: 2, turns: [ECHO_TURN] },
  noise: {
    name: 'noise',
    beforeReady: [{ kind: 'noise', text: 'fuseraft: loading plugins...' }],
    turns: [
      {
        steps: [
          { raw: [{ kind: 'noise' }, { kind: 'unknown-event' }, { kind: 'unknown-fields', text: 'Extra fields. ' }] },
          { token: { echo: true, prefix: 'Despite the noise: ' } },
        ],
      },
    ],
  },
  crash: { name: 'crash', turns: [{ steps: [{ token: 'Starting, then crashing. ' }, { crash: { code: 3 } }] }] },
  stubborn: {
    name: 'stubborn',
    ignoreSignals: true,
    turns: [
      {
        steps: [
          { token: 'Spawning helpers. ' },
          { grandchildren: { count: 1, session: false } },
          { grandchildren: { count: 1, session: true } },
          { pause: 30_000, join: false },
        ],
      },
    ],
  },
};

/**
 * What each bridge scenario does (`fuseraft run --bridge -c <config> <task>`; the config file must exist, or
 * the session fails before it starts: only `result` with `sessionId: null`, exit 1):
 * - `success` (default): `Planner` plans (a `tool_calling`), an `Orchestrator` correction, a
 *   `token_budget_warning`, a `shell_command` approval, `Coder` answers (echoing the task); `result
 *   {succeeded: true, exitCode: 0, turns: 2}`, exit 0.
 * - `failure`: `Coder` answers once, then `result {succeeded: false, errorMessage, exitCode: 1}`, exit 1.
 * - `approvals`: a `route_approval`, then a kind the seed does not list (`budget_increase`); `Coder` answers.
 * - `slow`: `Coder` works ~30 s: the target of `interrupt` (`result {succeeded: false, errorMessage:
 *   "Session cancelled.", exitCode: 130}`, exit 130).
 * - `wrong-version`: `ready.protocolVersion` is 2; otherwise `success`.
 * - `noise`: non-JSON lines before `ready` and between events; otherwise `success`.
 * - `crash`: exits 3 after the first agent message, with no `result`.
 * - `stubborn`: ignores `interrupt`, SIGINT and SIGTERM, spawns two grandchildren (group and own session),
 *   then works 30 s.
 */
const SUCCESS_STEPS: FuseraftScenario['bridge'] = [
  { agent: 'Planner', message: 'Plan: 1. read the code 2. fix it 3. run the tests.', tools: [{ name: 'read_file', argsSummary: 'path=src/index.ts' }], ms: 10 },
  { orchestrator: 'Route to Coder: the plan is ready.' },
  { budgetWarning: { agent: 'Coder', inputTokens: 90_000, warnThreshold: 80_000 } },
  { approval: { kind: 'shell_command', command: 'npm test' } },
  { agent: 'Coder', message: { echo: true, prefix: 'Done: ' }, tools: [{ name: 'shell_run', argsSummary: 'command=npm test' }], ms: 10 },
];

const BRIDGE: Readonly<Record<FuseraftBridgeScenarioName, FuseraftScenario>> = {
  success: { name: 'success', bridge: SUCCESS_STEPS },
  failure: {
    name: 'failure',
    bridge: [{ agent: 'Coder', message: 'I could not finish.' }],
    end: { succeeded: false, errorMessage: 'Max turns reached without a terminating keyword.', exitCode: 1 },
  },
  approvals: {
    name: 'approvals',
    bridge: [
      { approval: { kind: 'route_approval', keyword: 'DEPLOY', sourceAgent: 'Planner', targetAgent: 'Deployer' } },
      { approval: { kind: 'budget_increase', agent: 'Coder', tokens: 50_000 } },
      { agent: 'Coder', message: { echo: true, prefix: 'Done: ' } },
    ],
  },
  slow: { name: 'slow', bridge: [{ agent: 'Coder', message: 'Finally.', ms: 30_000 }] },
  'wrong-version': { name: 'wrong-version', protocolVersion: 2, bridge: SUCCESS_STEPS },
  noise: {
    name: 'noise',
    beforeReady: [{ kind: 'noise', text: 'fuseraft: loading config...' }],
    bridge: [{ raw: [{ kind: 'noise' }, { kind: 'unknown-event', type: 'agent_thinking' }] }, ...(SUCCESS_STEPS ?? [])],
  },
  crash: { name: 'crash', bridge: [{ agent: 'Coder', message: 'Halfway.' }, { crash: { code: 3 } }] },
  stubborn: {
    name: 'stubborn',
    ignoreSignals: true,
    bridge: [
      { grandchildren: { count: 1, session: false } },
      { grandchildren: { count: 1, session: true } },
      { agent: 'Coder', message: 'Finally.', ms: 30_000 },
    ],
  },
};

export const FUSERAFT_BUILTIN_SCENARIOS = { repl: REPL, bridge: BRIDGE } as const;
