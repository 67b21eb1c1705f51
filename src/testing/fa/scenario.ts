// The FaScenario type: a JSON script of what the fake `fa` does in one headless run, and the built-in names.
import type { JsonObject } from '../../wire/index.js';
import type { TextSpec } from '../scenario.js';
import type { HogSpec } from '../process/hog.js';

/** A line the fake writes on stdout outside HEP v1's frame catalog, on purpose. */
export type FaRawLine =
  /** Not JSON. Default text: `this is not json {`. */
  | { kind: 'garbage'; text?: string }
  /** A JSON object whose `type` HEP v1 does not define (default `"mystery_frame"`), with the round's `turn_id`. */
  | { kind: 'unknown-frame'; type?: string }
  /** A well-formed `message_delta` of the round carrying extra fields a newer v1 might add (`fields`). */
  | { kind: 'unknown-fields'; delta?: string; fields?: JsonObject }
  /** A JSON value that is not an object (default `[1,2,3]`). */
  | { kind: 'not-object'; json?: string }
  /** Exactly this text (a newline is appended unless `newline` is false). */
  | { kind: 'literal'; line: string; newline?: boolean };

/**
 * One step of a round, run in order. Text steps stream `message_delta` frames and make up the round's
 * assistant message (the `turn_done.message` is exactly the concatenated deltas, as in fa).
 */
export type FaStep =
  /** `message_delta` frames: the text cut into `chunks` pieces (default 1) over `ms` (default 0). */
  | { text: TextSpec; chunks?: number; ms?: number }
  /**
   * A tool call: `tool_start` (args as fa's one-line `key=value` summary, or the raw JSON with
   * `--output events=full`), one `tool_delta` per `updates` entry, then after `durationMs` its result joins
   * the round's `turn_done.tool_results` (`text` cut at 2000 chars with `…(+N chars)`; `ok` default true).
   * `heartbeat: true` adds one `tool_liveness` heartbeat frame while it runs.
   */
  | {
      tool: string;
      args?: JsonObject;
      result?: TextSpec;
      ok?: boolean;
      updates?: string[];
      durationMs?: number;
      heartbeat?: boolean;
    }
  /** A context compaction bracketed like a round: `compaction_start`, then `compaction_end {tokens_freed}`. */
  | { compaction: { tokensFreed?: number } }
  /** Waits `ms` (a signal sent meanwhile cancels the run, unless the scenario ignores signals). */
  | { pause: number }
  /** Writes these lines outside the frame catalog. */
  | { raw: FaRawLine[] }
  /**
   * Spawns `count` (default 1) grandchildren ignoring SIGTERM and SIGINT, in the fake's process group or
   * (`session: true`) each in its own session; each exits on its own after `lifeMs` (default and max 60000).
   * Their pids go to the transcript (`grandchildren`) and to stderr; the run waits until they are ready.
   */
  | { grandchildren: { count?: number; session?: boolean; lifeMs?: number } }
  /** Starts a hog grandchild (allocates, starts processes, burns CPU: see `HogSpec`); the round waits until it allocated. */
  | { hog: HogSpec }
  /** Writes `partial` (default: the first half of a `turn_done` frame) with no newline, then SIGKILLs itself. */
  | { dieMidFrame: { partial?: string } }
  /** Exits at once with `code` (default 1) and no terminal frame. */
  | { crash: { code?: number } };

/** One assistant LLM round: `message_start`, its steps, then exactly one terminal frame. */
export interface FaRound {
  steps?: FaStep[];
  /**
   * Ends the round with `turn_error {error, fatal: true}` and the run with exit code 1 (a provider error).
   * The round's text and tools still stream first.
   */
  error?: string;
  /** `turn_done.stop_reason`. Default `toolUse` when the round called a tool, else `stop`. */
  stopReason?: string;
  /** `turn_done.usage`. Default: `input` 1000 per round so far, `output` ~ characters / 4, `cost` from both. */
  usage?: { input: number; output: number; cost: number };
}

/**
 * What a fake `fa` does, as plain JSON (pass it to `fakeFa()` or save it as a file for
 * `subvisor-fake-fa path/to/scenario.json`). Every field is optional: `{}` answers the task by echoing it.
 */
export interface FaScenario {
  name?: string;
  /** `hep_header.hep`. Default `"v1"`; anything else is a wrong major version. */
  hep?: string;
  /** `hep_header.fah` (and `--version`). Default `"0.0.0-fake"`. */
  fah?: string;
  /** `hep_header.session`. Default: `--session <name>` when given, else a random id. */
  session?: string;
  /**
   * Prints prose even with `--output events`, as an fa without HEP would: no header, the answer text on
   * stdout, tool traces on stderr, same exit codes.
   */
  prose?: boolean;
  /** Fails like a bad command line: this message (and a usage hint) on stderr, exit code 64, nothing on stdout. */
  usageError?: string;
  /** The rounds, in order. Default: one round whose text echoes the task. */
  rounds?: FaRound[];
  /** SIGINT and SIGTERM do nothing (only SIGKILL ends it). Default false: either cancels (`cancelled`, exit 130). */
  ignoreSignals?: boolean;
  /** Safety cap: after this long the fake exits 1 whatever it is doing. Default 600000 (10 minutes). */
  maxLifeMs?: number;
}

/** The scenarios shipped with the fake fa (see `FA_BUILTIN_SCENARIOS` for what each one does). */
export const FA_BUILTIN_SCENARIO_NAMES = [
  'tools',
  'echo',
  'long-answer',
  'provider-error',
  'slow',
  'usage-error',
  'garbage',
  'wrong-version',
  'no-header',
  'killed-mid-frame',
  'crash',
  'stubborn',
  'compaction',
] as const;

export type FaBuiltinScenarioName = (typeof FA_BUILTIN_SCENARIO_NAMES)[number];

export function isFaBuiltinScenarioName(value: unknown): value is FaBuiltinScenarioName {
  return typeof value === 'string' && (FA_BUILTIN_SCENARIO_NAMES as readonly string[]).includes(value);
}
