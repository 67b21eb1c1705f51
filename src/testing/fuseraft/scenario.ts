// The FuseraftScenario type: a JSON script of what the fake fuseraft does in `repl --vscode` or `run --bridge`.
import type { HogSpec } from '../process/hog.js';
import type { JsonObject, JsonValue } from '../../wire/index.js';
import type { TextSpec } from '../scenario.js';

/** An `approval_request`: a known kind with its fields, or any other kind (which a client must never auto-approve). */
export type FuseraftApprovalRequest =
  | { kind: 'shell_command'; command: string }
  | { kind: 'tool_action'; plugin: string; action: string; detail: string }
  | { kind: 'file_write'; plugin: string; action: string; path: string; oldContent: string; newContent: string }
  | { kind: 'route_approval'; keyword: string; sourceAgent: string; targetAgent: string }
  | { kind: string; [field: string]: JsonValue };

/** `tool_result.output` is capped at this many characters, as the seed says. */
export const FUSERAFT_TOOL_OUTPUT_CAP = 100_000;

/** The environment variable with which a client says it can answer `question` events. */
export const FUSERAFT_QUESTIONS_ENV = 'FUSERAFT_VSCODE_QUESTIONS';

/** A stdout line outside the protocol, on purpose. */
export type FuseraftRawLine =
  /** Plain text, as leaked slash-command output (default `Slash command output leaked to stdout`). */
  | { kind: 'noise'; text?: string }
  /** An event type the seed does not list (default `mystery_event`). */
  | { kind: 'unknown-event'; type?: string }
  /** A `token` event with extra fields a newer fuseraft might add. */
  | { kind: 'unknown-fields'; text?: string; fields?: JsonObject }
  /** Exactly this text (a newline is appended unless `newline` is false). */
  | { kind: 'literal'; line: string; newline?: boolean };

/** Steps either mode can run. */
export type FuseraftCommonStep =
  /** Waits `ms`. In repl mode, with `untilInput`, a mid-turn `user_input` ends it early; with `join: false` no interjection joins at its end. */
  | { pause: number; untilInput?: boolean; join?: boolean }
  /**
   * An `approval_request` (the kind and its fields), answered by the next `approval_response` line (an
   * earlier unanswered one answers it at once; any other line but `user_input` and `interrupt`, or a
   * response whose `approved` is not a boolean, counts as a denial; end of stdin denies). In repl mode an
   * approved `shell_command` / `tool_action` / `file_write` is followed by its tool's `tool_call` and
   * `tool_result`; a denied one by a failed `tool_result`.
   */
  | { approval: FuseraftApprovalRequest }
  /** Writes these lines outside the protocol. */
  | { raw: FuseraftRawLine[] }
  /** Spawns grandchildren ignoring SIGTERM and SIGINT (in the fake's group, or `session: true` in their own session). */
  | { grandchildren: { count?: number; session?: boolean; lifeMs?: number } }
  /** Starts a hog grandchild (allocates, starts processes, burns CPU: see `HogSpec`); the step waits until it allocated. */
  | { hog: HogSpec }
  /** Exits at once with `code` (default 1): no `message_end`, `session_end` or `result`. */
  | { crash: { code?: number } };

/** One step of a repl turn. */
export type FuseraftReplStep =
  | FuseraftCommonStep
  /** `token` events: the text cut into `chunks` (default 1) over `ms`; the turn's answer is all its tokens. */
  | { token: TextSpec; chunks?: number; ms?: number }
  /** `thinking` events, the same way. */
  | { thinking: TextSpec; chunks?: number; ms?: number }
  /**
   * `tool_call {id, name, summary, args?}`, then after `durationMs` `tool_result {id, name, ok, output}`
   * (`output` capped at 100 000 chars). Queued mid-turn messages join the turn after the result.
   */
  | { tool: string; args?: JsonObject; summary?: string; output?: TextSpec; ok?: boolean; durationMs?: number }
  /** `retrying {attempt, max}` (the stream dropped and is being retried). */
  | { retrying: { attempt?: number; max?: number } }
  /**
   * A `question {question, options, allowOther}` answered by the next `question_response`; only when the
   * client spawned it with FUSERAFT_VSCODE_QUESTIONS=1 (otherwise the agent has no ask_user tool: skipped).
   */
  | { question: { question: string; options?: string[]; allowOther?: boolean } };

/** One repl turn, from `turn_start` to `message_end` (or `cancelled` / `error`, with no `message_end`). */
export interface FuseraftTurn {
  steps?: FuseraftReplStep[];
  /** Ends the turn with `error {text}` and no `message_end` (the chat goes on). */
  error?: string;
  /** `message_end` usage. Default: `inputTokens` 1200 per turn, `outputTokens` ~ characters / 4. */
  usage?: { inputTokens: number | null; outputTokens: number | null; cachedInputTokens?: number };
  /** `dropped`: mid-turn messages are dropped (`interjection {status: dropped}`) instead of joined or carried. */
  interjections?: 'dropped';
}

/** One step of a bridge session. */
export type FuseraftBridgeStep =
  | FuseraftCommonStep
  /**
   * One agent turn: `agent_starting {agent}`, a `tool_calling` per tool, then `agent_message` with the
   * AgentMessage (`role: assistant`), after `ms`.
   */
  | {
      agent: string;
      message: TextSpec;
      tools?: Array<{ name: string; argsSummary?: string; succeeded?: boolean }>;
      usage?: { inputTokens: number | null; outputTokens: number | null };
      ms?: number;
    }
  /** An `agent_message` from `Orchestrator` (`role: user`): a routing correction. */
  | { orchestrator: string }
  /** `token_budget_warning {agent, inputTokens, warnThreshold}`. */
  | { budgetWarning: { agent: string; inputTokens: number; warnThreshold: number } };

/** How a bridge session ends when nothing cancels it. */
export type FuseraftBridgeEnd = { succeeded: true } | { succeeded: false; errorMessage: string; exitCode?: number };

/**
 * What a fake fuseraft does, as plain JSON (pass it to `fakeFuseraft()` or save it as a file). Every field
 * is optional: `{}` is a repl that echoes each message, and a bridge session of one agent message.
 */
export interface FuseraftScenario {
  name?: string;
  /** `ready.protocolVersion`. Default 1; anything else is a breaking version. */
  protocolVersion?: number;
  /** `ready` fields (repl). Defaults: `fake-model-1`, a random session id, `/compact` and `/status` mid-turn. */
  model?: string;
  sessionId?: string;
  midTurnCommands?: string[];
  /** Repl turn N runs `turns[N-1]`; later turns repeat the last entry. Default: one turn echoing the message. */
  turns?: FuseraftTurn[];
  /** Lines written before `ready` (noise a client must skip). */
  beforeReady?: FuseraftRawLine[];
  /** Bridge: the agents named in `ready` (default: the agents of the steps, else `["Coder"]`). */
  agents?: string[];
  /** Bridge: the session's steps. Default: one `Coder` message echoing the task. */
  bridge?: FuseraftBridgeStep[];
  /** Bridge: how the session ends. Default succeeded. */
  end?: FuseraftBridgeEnd;
  /** Interrupts (lines), SIGINT and SIGTERM do nothing; only SIGKILL ends it (stdin's end still ends an idle repl). */
  ignoreSignals?: boolean;
  /** Repl: the end of stdin never ends the session (no `session_end`, no exit): a shutdown that hangs. */
  ignoreStdinEnd?: boolean;
  /** Safety cap: after this long the fake exits 1 whatever it is doing. Default 600000 (10 minutes). */
  maxLifeMs?: number;
}

/** The built-in scenarios of each mode (see `FUSERAFT_BUILTIN_SCENARIOS`). */
export const FUSERAFT_REPL_SCENARIO_NAMES = [
  'chat',
  'echo',
  'interjections',
  'approvals',
  'questions',
  'slow',
  'error-turn',
  'big-output',
  'retrying',
  'wrong-version',
  'noise',
  'crash',
  'stubborn',
] as const;

export const FUSERAFT_BRIDGE_SCENARIO_NAMES = ['success', 'failure', 'approvals', 'slow', 'wrong-version', 'noise', 'crash', 'stubborn'] as const;

export type FuseraftReplScenarioName = (typeof FUSERAFT_REPL_SCENARIO_NAMES)[number];
export type FuseraftBridgeScenarioName = (typeof FUSERAFT_BRIDGE_SCENARIO_NAMES)[number];
export type FuseraftMode = 'repl' | 'bridge';

export function isFuseraftBuiltinScenarioName(mode: FuseraftMode, value: unknown): boolean {
  const names: readonly string[] = mode === 'repl' ? FUSERAFT_REPL_SCENARIO_NAMES : FUSERAFT_BRIDGE_SCENARIO_NAMES;
  return typeof value === 'string' && names.includes(value);
}
