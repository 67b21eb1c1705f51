// Scenarios of the fake fuseraft serve daemon: what it does with each task, its handshake, and the misbehaviours it plays on cue.
import type { JsonObject } from '../../wire/index.js';

/** What the fake daemon does with one task (one `user_input`). */
export interface ServeTaskPlan {
  /** Messages sent after `queued`, in order (e.g. `{ type: 'agent_starting', agent: 'Coder' }`). */
  progress?: JsonObject[];
  /**
   * `approval_request`s sent one at a time after the progress (each `{ kind, ...fields }`); the daemon
   * waits for each `approval_response`. A denial fails the task ("denied: <kind>").
   */
  approvals?: JsonObject[];
  /** The task's `lastMessage`. Default: `echo: <the task text>`. */
  answer?: string;
  /** `result.lastAgent`. Default `Coder`. */
  lastAgent?: string;
  /** Default true: `result.succeeded`. False sends `errorMessage` (default `the task failed`). */
  succeeded?: boolean;
  errorMessage?: string;
  /** Never finishes by itself: only an `interrupt` ends it (with `succeeded: false`). */
  hang?: boolean;
}

/** Misbehaviours of the fake daemon. */
export type ServeMisbehaviour =
  /** Refuse every WebSocket handshake with HTTP 401 (a Unix socket connection is closed at once). */
  | 'refuse'
  /** Drop the connection right after `queued` of the first task; the task goes on and finishes while the client is away. */
  | 'drop-mid-turn'
  /** Drop the connection on the first `user_input`, before `queued`; the task goes on all the same. */
  | 'drop-before-queued'
  /** Never answer WebSocket pings. */
  | 'no-pong'
  /** Send a line that is not JSON after `queued`, then go on. */
  | 'malformed'
  /** Send a message of a type no client knows after `queued`, then go on. */
  | 'unknown-type'
  /** Say `protocolVersion: 2` in `hello`. */
  | 'wrong-version'
  /** Say `readOnly: true` in `hello` and answer every `user_input` with an `error`. */
  | 'read-only'
  /** Ask one approval of a kind no client knows (`kind: 'launch_rocket'`) before the result. */
  | 'unknown-approval-kind'
  /** Send nothing at all on a new connection (no hello). */
  | 'silent'
  /** Read every `interrupt` and do nothing with it: a task that hangs goes on hanging. */
  | 'ignore-interrupt'
  /** After `queued`, send the `queued` and the `result` of another client's task (`sessionId: "sess-other"`) too. */
  | 'other-task';

/** A whole scenario. Every field is optional. */
export interface ServeScenario {
  /** One plan per task, in order; the last one repeats for later tasks. Default: one echo task. */
  tasks?: ServeTaskPlan[];
  misbehave?: ServeMisbehaviour[];
}

/** The built-in scenarios, by name. */
export const FUSERAFT_SERVE_BUILTIN_SCENARIOS = {
  /** Echoes each task: `queued`, then `result` with `lastMessage: "echo: <task>"`. */
  echo: {},
  /** Progress events, then the answer. */
  progress: {
    tasks: [{
      progress: [
        { type: 'agent_starting', agent: 'Planner' },
        { type: 'tool_calling', agent: 'Coder', tool: 'read_file', argsSummary: 'path=README.md' },
        { type: 'token_budget_warning', agent: 'Coder', inputTokens: 9000, warnThreshold: 8000 },
        { type: 'task_resumed', sessionId: 'ignored', task: 'ignored' },
      ],
      answer: 'The README describes subvisor.',
    }],
  },
  /** Asks to run a shell command; approved, the answer names it; denied, the task fails. */
  approval: { tasks: [{ approvals: [{ kind: 'shell_command', command: 'npm test' }], answer: 'ran npm test' }] },
  /** A task that fails (`succeeded: false`). */
  failing: { tasks: [{ succeeded: false, errorMessage: 'the model provider is down' }] },
  /** A task that runs until it is interrupted. */
  hang: { tasks: [{ hang: true }] },
} as const satisfies Record<string, ServeScenario>;

export type ServeBuiltinName = keyof typeof FUSERAFT_SERVE_BUILTIN_SCENARIOS;
