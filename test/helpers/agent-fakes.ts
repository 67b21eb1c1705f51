// The Agent Handler conformance suite's view of each protocol's fake child: one adapter per protocol fake on main.
import { expandText, fakeChild } from '../../src/testing/index.js';
import type { Scenario } from '../../src/testing/index.js';
import type { AgentOptions } from '../../src/agent/index.js';

/** What a fake child does in a conformance case. */
export type Behaviour =
  /** Thinking, a tool call, text in deltas, then the answer: the invoke's text must be exactly {@link ANSWER_TEXT}. */
  | 'answer'
  /** A tool call that stays quiet for a minute (nothing to read while the consumer waits). */
  | 'quiet-tool'
  /** Dies mid-turn without saying anything. */
  | 'crash'
  /** Stops doing anything after it started (no acks, no events, no exit). */
  | 'hang'
  /** Ignores cancel and SIGTERM, with grandchildren in their own session that ignore SIGTERM too; quiet for a minute. */
  | 'stubborn'
  /** An answer of about 1 MiB of multi-byte text. */
  | 'huge-answer';

export interface FakeInstance {
  /** Spread into asAgent's options. */
  options: AgentOptions;
  /** Pids of this fake's processes still alive (children and grandchildren). */
  livePids(): number[];
  /** How many child processes this fake has started so far. */
  started(): number;
  cleanup(): void;
}

export interface ProtocolFake {
  protocol: string;
  /** Whether the protocol keeps a child across prompts (Fen yes; one process per prompt protocols no). */
  keepAlive: boolean;
  make(behaviour: Behaviour): FakeInstance;
}

/** The text the 'answer' behaviour must produce through collect(). */
export const ANSWER_TEXT = 'Part one. The answer is 42.';
export const HUGE_PREFIX = 'Writing a very long answer. ';
/** The 'huge-answer' behaviour's answer (after {@link HUGE_PREFIX}). */
export const HUGE_ANSWER = expandText({ repeat: 'aé€😀', bytes: 1024 * 1024 });

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
  'quiet-tool': { turns: [{ steps: [{ tool: 'sleep', durationMs: 60_000 }], answer: 'never' }] },
  crash: { turns: [{ steps: [{ text: 'Starting. ' }, { misbehave: { crash: { code: 1 } } }] }] },
  hang: { misbehaviours: [{ at: 'after-ready', do: 'hang' }] },
  stubborn: {
    ignore: ['cancel', 'sigterm'],
    turns: [{ steps: [{ misbehave: { grandchildren: { count: 2, session: true } } }, { pause: 60_000 }] }],
  },
  'huge-answer': { turns: [{ steps: [{ text: HUGE_PREFIX }], answer: { repeat: 'aé€😀', bytes: 1024 * 1024 } }] },
};

const fen: ProtocolFake = {
  protocol: 'fen',
  keepAlive: true,
  make(behaviour) {
    const child = fakeChild(FEN_SCENARIOS[behaviour], { turnTickMs: 5, idleTickMs: 20 });
    return {
      options: { command: child.command, args: child.args, env: child.env, killGraceMs: 500 },
      livePids: () => child.livePids(),
      started: () => child.transcripts().length,
      cleanup: () => child.cleanup(),
    };
  },
};

/**
 * Every protocol fake on main. Fen's fakeChild() is here; the HEP and fuseraft fakes join this list as
 * they land (each an adapter giving the same behaviours).
 */
export const PROTOCOL_FAKES: ProtocolFake[] = [fen];
