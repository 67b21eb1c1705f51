// The built-in scenarios of the fake fa, by name.
import type { FaBuiltinScenarioName, FaRound, FaScenario } from './scenario.js';

/** A round of about 30 s that never finishes early: the target of cancel and kill tests. */
const LONG_ROUND: FaRound = { steps: [{ text: 'Working on it. ' }, { pause: 30_000 }, { text: 'Done.' }] };

/** Three rounds: two with tools (the first reads, the second runs a command with a big, bounded output), then the answer. */
const TOOL_ROUNDS: FaRound[] = [
  {
    steps: [
      { text: 'I will read the README first, then look for the test command.', chunks: 3, ms: 30 },
      { tool: 'read_file', args: { path: 'README.md' }, result: '# subvisor\nSpawn and supervise child AI agents.', durationMs: 20 },
      { tool: 'grep', args: { pattern: '"test"', path: 'package.json' }, result: '"test": "vitest run"', durationMs: 10 },
    ],
  },
  {
    steps: [
      {
        tool: 'bash',
        args: { command: 'npm test', timeout: 600 },
        updates: ['> vitest run\n', ' ✓ 42 tests passed\n'],
        result: { repeat: 'PASS test/example.test.ts ✓\n', bytes: 6000 },
        durationMs: 40,
        heartbeat: true,
      },
      { tool: 'read_file', args: { path: 'missing.txt' }, result: 'ENOENT: no such file or directory', ok: false },
    ],
  },
  {
    steps: [{ text: { echo: true, prefix: 'The tests pass. About "', suffix: '": done, see the README.' }, chunks: 4, ms: 30 }],
  },
];

/**
 * What each built-in scenario does (every one answers `-p <task>` as one headless run):
 * - `tools` (the default): three rounds. Round 1 streams text and calls `read_file` and `grep`
 *   (stop_reason `toolUse`); round 2 runs `bash` with two `tool_delta` updates, a `tool_liveness` heartbeat
 *   and a ~6000-char result cut to 2000 chars with `…(+N chars)`, and a failing `read_file` (`ok: false`);
 *   round 3 answers (echoing the task). Exit 0. About 0.2 s.
 * - `echo`: one round whose text is the task. Exit 0.
 * - `long-answer`: one round answering ~400 KB of multi-byte text in 40 deltas: the `turn_done` is one
 *   line of ~400 KB. Exit 0.
 * - `provider-error`: round 1 calls a tool; round 2 streams a little, then `turn_error {fatal: true}`. Exit 1.
 * - `slow`: round 1 takes ~30 s (the target of cancel tests): SIGINT or SIGTERM gives `cancelled`, exit 130.
 * - `usage-error`: writes nothing on stdout, a usage error on stderr, exit 64.
 * - `garbage`: round 1 writes a non-JSON line, a frame type HEP v1 does not define, a `message_delta` with
 *   unknown fields and a JSON array between good frames, then answers normally. Exit 0.
 * - `wrong-version`: `hep_header.hep` is `"v2"`; the rest is a normal run. Exit 0.
 * - `no-header`: prints prose even with `--output events` (no header, no frames). Exit 0.
 * - `killed-mid-frame`: round 1 streams a little, writes half a `turn_done` line, then SIGKILLs itself.
 * - `crash`: round 1 streams a little, then exits 3 with no terminal frame.
 * - `stubborn`: ignores SIGINT and SIGTERM, spawns two grandchildren ignoring both (one in its process group,
 *   one in its own session), then pauses 30 s: only SIGKILL ends it (the grandchildren end on their own
 *   after 60 s at most).
 * - `compaction`: a pre-flight compaction bracket (`compaction_start` / `compaction_end`) in round 1, then
 *   the answer. Exit 0.
 */
export const FA_BUILTIN_SCENARIOS: Readonly<Record<FaBuiltinScenarioName, FaScenario>> = {
  tools: { name: 'tools', rounds: TOOL_ROUNDS },
  echo: { name: 'echo' },
  'long-answer': {
    name: 'long-answer',
    rounds: [{ steps: [{ text: { repeat: 'aé€😀 ', bytes: 400 * 1024 }, chunks: 40 }] }],
  },
  'provider-error': {
    name: 'provider-error',
    rounds: [
      { steps: [{ text: 'Looking.' }, { tool: 'read_file', args: { path: 'README.md' }, result: '# subvisor' }] },
      { steps: [{ text: 'Almost' }], error: 'provider error: 529 overloaded_error: the model is overloaded' },
    ],
  },
  slow: { name: 'slow', rounds: [LONG_ROUND] },
  'usage-error': { name: 'usage-error', usageError: 'unknown argument: --frobnicate' },
  garbage: {
    name: 'garbage',
    rounds: [
      {
        steps: [
          { text: 'Before the garbage. ' },
          {
            raw: [
              { kind: 'garbage' },
              { kind: 'unknown-frame' },
              { kind: 'unknown-fields', delta: 'With extra fields. ' },
              { kind: 'not-object' },
            ],
          },
          { text: { echo: true, prefix: 'Answered despite garbage: ' } },
        ],
      },
    ],
  },
  'wrong-version': { name: 'wrong-version', hep: 'v2' },
  'no-header': { name: 'no-header', prose: true, rounds: TOOL_ROUNDS },
  'killed-mid-frame': {
    name: 'killed-mid-frame',
    rounds: [{ steps: [{ text: 'About to be cut off. ', chunks: 2 }, { dieMidFrame: {} }] }],
  },
  crash: { name: 'crash', rounds: [{ steps: [{ text: 'Starting, then crashing. ' }, { crash: { code: 3 } }] }] },
  stubborn: {
    name: 'stubborn',
    ignoreSignals: true,
    rounds: [
      {
        steps: [
          { text: 'Spawning helpers. ' },
          { grandchildren: { count: 1, session: false } },
          { grandchildren: { count: 1, session: true } },
          { pause: 30_000 },
        ],
      },
    ],
  },
  compaction: {
    name: 'compaction',
    rounds: [{ steps: [{ compaction: { tokensFreed: 12_000 } }, { text: { echo: true, prefix: 'After compaction: ' } }] }],
  },
};
