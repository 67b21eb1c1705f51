// The Agent Handler conformance suite's view of each protocol's fake child: one adapter per protocol fake (Fen, HEP, fuseraft).
import { expandText, fakeChild, fakeFa, fakeFuseraft } from '../../src/testing/index.js';
import type { FaScenario, FuseraftScenario, Scenario } from '../../src/testing/index.js';
import type { AgentOptions } from '../../src/agent/index.js';
import type { JsonValue } from '../../src/wire/index.js';

/** What a fake child does in a conformance case. */
export type Behaviour =
  /** Thinking (where the protocol has it), a tool call, text in deltas, then the answer: the invoke's text must be exactly {@link ANSWER_TEXT}. */
  | 'answer'
  /** A tool call that stays quiet for a minute (nothing to read while the consumer waits). */
  | 'quiet-tool'
  /** Dies mid-turn without saying anything. */
  | 'crash'
  /** Stops doing anything after it started (no acks, no events, no exit). */
  | 'hang'
  /** Ignores cancel and SIGTERM, with two grandchildren in their own sessions that ignore SIGTERM too; quiet for a minute. */
  | 'stubborn'
  /** An answer of about 1 MiB of multi-byte text. */
  | 'huge-answer';

export interface FakeInstance {
  /** Spread into asAgent's options (the protocol included). */
  options: AgentOptions;
  /** Pids of this fake's processes still alive (children and grandchildren, found by the kit's token). */
  livePids(): number[];
  /** Pids of the grandchildren the most recent child spawned (from its transcript). */
  grandchildPids(): number[];
  /** How many child processes this fake has started so far. */
  started(): number;
  cleanup(): void;
}

/** What the 'answer' behaviour yields beside its text, which differs by what each protocol can carry. */
export interface AnswerShape {
  /** The joined `thinking` deltas; '' for a protocol without thinking (HEP). */
  thinking: string;
  /** The `tool_started.args` of the one tool call. */
  toolArgs: JsonValue;
  /** The `tool_ended.content` of that call. */
  toolContent: JsonValue;
}

export interface ProtocolFake {
  protocol: 'fen' | 'hep' | 'fuseraft';
  /** Whether the protocol keeps a child across prompts (Fen and the fuseraft repl yes; HEP's one-shot `fa -p` no). */
  keepAlive: boolean;
  answer: AnswerShape;
  make(behaviour: Behaviour): FakeInstance;
}

/** The text the 'answer' behaviour must produce through collect(). */
export const ANSWER_TEXT = 'Part one. The answer is 42.';
export const HUGE_PREFIX = 'Writing a very long answer. ';
/** The 'huge-answer' behaviour's answer (after {@link HUGE_PREFIX}). */
export const HUGE_ANSWER = expandText({ repeat: 'aé€😀', bytes: 1024 * 1024 });
const HUGE_SPEC = { repeat: 'aé€😀', bytes: 1024 * 1024 };
/** Long enough to outlast every test; the kits' safety caps end the fake anyway. */
const QUIET_MS = 60_000;
/** Faster than the 3 s default, so that kill-ladder tests stay well inside the contract's 3 s bound. */
const KILL_GRACE_MS = 500;

/** The latest transcript's grandchildren, or none when no child has started yet. */
function grandchildrenOf(transcripts: () => Array<{ grandchildren: number[] }>): () => number[] {
  return () => transcripts().at(-1)?.grandchildren ?? [];
}

const FEN_SCENARIOS: Record<Behaviour, Scenario> = {
  answer: {
    turns: [
      {
        steps: [
          { thinking: 'pondering the question', chunks: 3 },
          { tool: 'read', arguments: { path: 'notes.txt' }, result: { lines: 3 }, durationMs: 10 },
          { text: 'Part one. ', chunks: 2 },
        ],
        answer: 'The answer is 42.',
        answerChunks: 3,
      },
    ],
  },
  'quiet-tool': { turns: [{ steps: [{ tool: 'sleep', durationMs: QUIET_MS }], answer: 'never' }] },
  crash: { turns: [{ steps: [{ text: 'Starting. ' }, { misbehave: { crash: { code: 1 } } }] }] },
  hang: { misbehaviours: [{ at: 'after-ready', do: 'hang' }] },
  stubborn: {
    ignore: ['cancel', 'sigterm'],
    turns: [{ steps: [{ misbehave: { grandchildren: { count: 2, session: true } } }, { pause: QUIET_MS }] }],
  },
  'huge-answer': { turns: [{ steps: [{ text: HUGE_PREFIX }], answer: HUGE_SPEC }] },
};

const fen: ProtocolFake = {
  protocol: 'fen',
  keepAlive: true,
  answer: { thinking: 'pondering the question', toolArgs: { path: 'notes.txt' }, toolContent: { lines: 3 } },
  make(behaviour) {
    const child = fakeChild(FEN_SCENARIOS[behaviour], { turnTickMs: 5, idleTickMs: 20 });
    return {
      options: { command: child.command, args: child.args, env: child.env, killGraceMs: KILL_GRACE_MS },
      livePids: () => child.livePids(),
      grandchildPids: grandchildrenOf(() => child.transcripts()),
      started: () => child.transcripts().length,
      cleanup: () => child.cleanup(),
    };
  },
};

/**
 * HEP's answer is the last round's message and its text is every round's deltas: round one streams
 * 'Part one. ' and calls the tool, round two streams the rest. fa has no thinking frames.
 */
const FA_SCENARIOS: Record<Behaviour, FaScenario> = {
  answer: {
    rounds: [
      { steps: [{ text: 'Part one. ', chunks: 2 }, { tool: 'read', args: { path: 'notes.txt' }, result: '3 lines', durationMs: 10 }] },
      { steps: [{ text: 'The answer is 42.', chunks: 3 }] },
    ],
  },
  'quiet-tool': { rounds: [{ steps: [{ tool: 'sleep', durationMs: QUIET_MS }] }] },
  crash: { rounds: [{ steps: [{ text: 'Starting. ' }, { crash: { code: 1 } }] }] },
  hang: { rounds: [{ steps: [{ pause: QUIET_MS }] }] },
  stubborn: { ignoreSignals: true, rounds: [{ steps: [{ grandchildren: { count: 2, session: true } }, { pause: QUIET_MS }] }] },
  'huge-answer': { rounds: [{ steps: [{ text: HUGE_PREFIX }, { text: HUGE_SPEC, chunks: 16 }] }] },
};

const hep: ProtocolFake = {
  protocol: 'hep',
  keepAlive: false,
  answer: { thinking: '', toolArgs: 'path="notes.txt"', toolContent: '3 lines' },
  make(behaviour) {
    const fa = fakeFa(FA_SCENARIOS[behaviour]);
    return {
      options: { protocol: 'hep', command: fa.command, args: fa.args, env: fa.env, killGraceMs: KILL_GRACE_MS },
      livePids: () => fa.livePids(),
      grandchildPids: grandchildrenOf(() => fa.transcripts()),
      started: () => fa.transcripts().length,
      cleanup: () => fa.cleanup(),
    };
  },
};

const FUSERAFT_SCENARIOS: Record<Behaviour, FuseraftScenario> = {
  answer: {
    turns: [
      {
        steps: [
          { thinking: 'pondering the question', chunks: 3 },
          { tool: 'read', args: { path: 'notes.txt' }, summary: 'read notes.txt', output: '3 lines', durationMs: 10 },
          { token: 'Part one. ', chunks: 2 },
          { token: 'The answer is 42.', chunks: 3 },
        ],
      },
    ],
  },
  'quiet-tool': { turns: [{ steps: [{ tool: 'sleep', durationMs: QUIET_MS }] }] },
  crash: { turns: [{ steps: [{ token: 'Starting. ' }, { crash: { code: 1 } }] }] },
  hang: { turns: [{ steps: [{ pause: QUIET_MS, join: false }] }] },
  stubborn: { ignoreSignals: true, turns: [{ steps: [{ grandchildren: { count: 2, session: true } }, { pause: QUIET_MS, join: false }] }] },
  'huge-answer': { turns: [{ steps: [{ token: HUGE_PREFIX }, { token: HUGE_SPEC, chunks: 16 }] }] },
};

const fuseraft: ProtocolFake = {
  protocol: 'fuseraft',
  keepAlive: true,
  answer: { thinking: 'pondering the question', toolArgs: { path: 'notes.txt' }, toolContent: '3 lines' },
  make(behaviour) {
    const repl = fakeFuseraft('repl', FUSERAFT_SCENARIOS[behaviour]);
    return {
      options: { protocol: 'fuseraft', command: repl.command, args: repl.args, env: repl.env, killGraceMs: KILL_GRACE_MS },
      livePids: () => repl.livePids(),
      grandchildPids: grandchildrenOf(() => repl.transcripts()),
      started: () => repl.transcripts().length,
      cleanup: () => repl.cleanup(),
    };
  },
};

/** Every protocol fake the conformance suite runs over. */
export const PROTOCOL_FAKES: ProtocolFake[] = [fen, hep, fuseraft];
