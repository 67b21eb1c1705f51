// The built-in scenarios of the fake child, by name.
import type { BuiltinScenarioName, Scenario, TurnScript } from './scenario.js';

/**
 * What the demo's canned tools "find" in subvisor's own README: its first sentence and its section headings
 * (test/process/project/docs.test.ts checks both against README.md, so the demo never says anything untrue about it).
 */
export const DEMO_README_OPENING = 'subvisor lets a parent process spawn and supervise child AI agents ("subagents").';
export const DEMO_README_SECTIONS: readonly string[] = [
  'Install',
  'Quick start',
  'The SDK',
  'Many runs: the pool',
  'The CLI',
  'The test kit',
  'Reliability',
  'Examples',
  'Documentation',
  'Development',
  'License',
];

/** A turn that answers its input at once. */
const ECHO_TURN: TurnScript = { answer: { echo: true } };

/** A turn of about five seconds (with the default cadence) that never finishes early. */
const SLOW_TURN: TurnScript = {
  steps: [
    { thinking: 'This will take a while. Working through it step by step.', chunks: 4, ms: 1000 },
    { tool: 'long_task', arguments: { step: 1 }, result: 'step 1 done', durationMs: 2000 },
    { text: 'Still working on it. ', chunks: 4, ms: 1000 },
  ],
  answer: { echo: true, prefix: 'Slowly answered: ' },
  answerChunks: 4,
  answerMs: 1000,
};

/** A turn that stays busy for `ms` (cooperatively: controls are read and acked meanwhile). */
const busyTurn = (ms: number): TurnScript => ({
  steps: [{ text: 'Working. ', chunks: 1 }, { pause: ms }],
  answer: { echo: true, prefix: 'Eventually: ' },
});

/**
 * What each built-in scenario does:
 * - `demo`: a realistic run of about two seconds. Turn 1 thinks, reads a file and greps it (tool calls with
 *   durations), pauses 0.8 s mid-turn (a steer sent then is injected with its ref), then streams an answer that
 *   acknowledges every steer injected before it. A follow-up
 *   (or a steer or prompt once ready) runs turn 2, which answers it. Finalize gives a tool-free summary.
 * - `echo`: answers each prompt, steer or follow-up by echoing it at once; stays in ready until close/cancel.
 * - `slow`: every turn takes about five seconds (thinking, a 2 s tool, streamed text and answer).
 * - `crash`: writes a little of turn 1, then `exit failed` and exit code 2.
 * - `crash-silent`: writes a little of turn 1, then exits with code 1 and no `exit` event.
 * - `stubborn`: acks cancel but ignores it, ignores SIGTERM, and its turns take 30 s.
 * - `huge-answer`: answers with ~1 MiB of multi-byte text (`aé€😀` repeated), so the result goes through
 *   `final-text-path`.
 * - `flood`: turn 1 writes 10000 `assistant-text-delta` events of ~200 bytes as fast as it can, then answers.
 * - `hang`: says ready, then never reads a control or does anything (until killed or orphaned).
 * - `never-ready`: never says ready.
 * - `garbage`: turn 1 writes garbage, an oversized line, an out-of-order seq, an unknown type and an invalid
 *   payload between good events, then answers normally.
 * - `grandchildren`: turn 1 spawns two grandchildren that ignore SIGTERM (one in the child's process group,
 *   one in its own session), the child ignores SIGTERM and cancel, and the turn takes 30 s.
 * - `linger`: echoes, but stays alive after its `exit` event until killed (it ignores SIGTERM throughout).
 * - `no-result`: echoes, but ends with `exit done` and no `result`.
 * - `version-mismatch`: turn 1 writes an event with `v: 2`, then goes on as if nothing happened.
 * - `foreign-run`: turn 1 writes a valid event for another run id, then goes on.
 * - `truncate-events`: turn 1 truncates the event file to zero bytes mid-turn, then goes on.
 * - `split-writes`: every line is written in 3 pieces split inside multi-byte characters; multi-byte answers.
 * - `stop-acking`: acks the first prompt, then reads controls but never acks or applies them; its turn takes 30 s.
 * - `ignore-finalize`: acks finalize (state finalizing) but never runs the final turn; its turns take 30 s.
 * - `ignore-deadline`: ignores `FEN_WIRE_DEADLINE`; its turns take 30 s.
 */
export const BUILTIN_SCENARIOS: Readonly<Record<BuiltinScenarioName, Scenario>> = {
  demo: {
    name: 'demo',
    agent: { provider: 'fake', model: 'fake-demo-1' },
    turns: [
      {
        steps: [
          { thinking: 'The user wants the README inspected. I will read it, then list its sections.', chunks: 6, ms: 200 },
          { tool: 'read_file', arguments: { path: 'README.md' }, result: `# subvisor\n\n${DEMO_README_OPENING}`, durationMs: 150 },
          { text: 'I have read the README. Listing its sections before answering. ', chunks: 4, ms: 150 },
          { pause: 800 },
          {
            tool: 'grep',
            arguments: { pattern: '^## ', path: 'README.md' },
            result: DEMO_README_SECTIONS.map((section) => `## ${section}`).join('\n'),
            durationMs: 150,
          },
        ],
        answer:
          "The README introduces subvisor, which spawns child AI agents and supervises them over Fen's wire protocol: " +
          'typed events, acknowledged controls, whole answers and no orphaned processes. ' +
          `Its sections: ${DEMO_README_SECTIONS.join(', ')}. ` +
          "(A scripted answer from subvisor's fake child: no model ran.)",
        answerChunks: 6,
        answerMs: 300,
        acknowledgeSteers: true,
      },
      {
        steps: [{ thinking: 'A follow-up on the same README.', chunks: 2, ms: 100 }],
        answer: { echo: true, prefix: 'On "', suffix: "\": a scripted follow-up answer from subvisor's fake child (no model ran)." },
        answerChunks: 3,
        answerMs: 150,
      },
    ],
    finalTurn: {
      answer: "Final answer: subvisor supervises child agents over Fen's wire protocol (summary written without tools).",
      answerChunks: 3,
      answerMs: 150,
    },
  },
  echo: { name: 'echo', turns: [ECHO_TURN] },
  slow: { name: 'slow', turns: [SLOW_TURN] },
  crash: {
    name: 'crash',
    turns: [
      {
        steps: [
          { text: 'Starting, then crashing. ', chunks: 2, ms: 60 },
          { misbehave: { crash: { code: 2, exitEvent: true, status: 'failed' } } },
        ],
      },
    ],
  },
  'crash-silent': {
    name: 'crash-silent',
    turns: [{ steps: [{ text: 'Starting, then dying. ', chunks: 2, ms: 60 }, { misbehave: { crash: { code: 1 } } }] }],
  },
  stubborn: { name: 'stubborn', ignore: ['cancel', 'sigterm'], turns: [busyTurn(30_000)] },
  'huge-answer': {
    name: 'huge-answer',
    turns: [{ steps: [{ text: 'Writing a very long answer. ' }], answer: { repeat: 'aé€😀', bytes: 1024 * 1024 } }],
  },
  flood: {
    name: 'flood',
    turns: [{ steps: [{ misbehave: { flood: { count: 10_000, bytes: 200 } } }], answer: 'Flood written.' }],
  },
  hang: { name: 'hang', misbehaviours: [{ at: 'after-ready', do: 'hang' }] },
  'never-ready': { name: 'never-ready', misbehaviours: [{ at: 'before-ready', do: 'hang' }] },
  garbage: {
    name: 'garbage',
    turns: [
      {
        steps: [
          { text: 'Before the garbage. ' },
          {
            misbehave: {
              raw: [
                { kind: 'garbage' },
                { kind: 'oversized' },
                { kind: 'out-of-order' },
                { kind: 'unknown-type' },
                { kind: 'invalid-payload' },
              ],
            },
          },
          { text: 'After the garbage. ' },
        ],
        answer: { echo: true, prefix: 'Answered despite garbage: ' },
      },
    ],
  },
  grandchildren: {
    name: 'grandchildren',
    ignore: ['cancel', 'sigterm'],
    turns: [
      {
        steps: [
          { misbehave: [{ grandchildren: { count: 1, session: false } }, { grandchildren: { count: 1, session: true } }] },
          { pause: 30_000 },
        ],
      },
    ],
  },
  linger: {
    name: 'linger',
    turns: [ECHO_TURN],
    // SIGTERM is ignored from the start: a parent that reads `exit` and signals at once must not win a race
    // against a handler installed only after the event was written.
    ignore: ['sigterm'],
    misbehaviours: [{ at: 'after-exit', do: { linger: {} } }],
  },
  'no-result': { name: 'no-result', turns: [ECHO_TURN], misbehaviours: [{ at: 'before-result', do: 'skip-result' }] },
  'version-mismatch': {
    name: 'version-mismatch',
    turns: [{ steps: [{ misbehave: { raw: [{ kind: 'wrong-version' }] } }, { pause: 30_000 }] }],
  },
  'foreign-run': {
    name: 'foreign-run',
    turns: [{ steps: [{ misbehave: { raw: [{ kind: 'foreign-run' }] } }, { pause: 30_000 }] }],
  },
  'truncate-events': {
    name: 'truncate-events',
    turns: [{ steps: [{ text: 'Some text. ' }, { misbehave: { truncateEvents: {} } }, { pause: 30_000 }] }],
  },
  'split-writes': {
    name: 'split-writes',
    misbehaviours: [{ at: 'before-ready', do: { splitWrites: { pieces: 3, gapMs: 5 } } }],
    turns: [{ steps: [{ text: 'Ünïcödé thinking — ✓ 😀 ', chunks: 3 }], answer: { echo: true, prefix: 'Écho ✓ 😀: ' } }],
  },
  'stop-acking': {
    name: 'stop-acking',
    misbehaviours: [{ at: 'turn-start', do: { stopAcking: 'ignore' } }],
    turns: [busyTurn(30_000)],
  },
  'ignore-finalize': { name: 'ignore-finalize', ignore: ['finalize'], turns: [busyTurn(30_000)] },
  'ignore-deadline': { name: 'ignore-deadline', ignore: ['deadline'], turns: [busyTurn(30_000)] },
};
