// The Scenario type: a typed, JSON-serialisable script of what a fake child does, and the built-in names.
import type { JsonObject, JsonValue, WireControlType } from '../wire/index.js';
import type { ReplayScript, ReplayTiming } from './replay/replay-script.js';

/**
 * Text of any size. A plain string is used as is; `{ repeat, bytes }` repeats `repeat` until the text
 * reaches `bytes` UTF-8 bytes (never cutting a character, so the result may be a few bytes short), so a
 * 1 MiB answer needs no 1 MiB of JSON; `{ echo: true }` is the text that started the turn (the prompt,
 * steer, follow-up or finalize note), optionally wrapped in `prefix`/`suffix`.
 */
export type TextSpec =
  | string
  | { repeat: string; bytes: number }
  | { echo: true; prefix?: string; suffix?: string };

/**
 * One step of a turn, run in order. Every step boundary is a cooperative yield: a `cancel`, `finalize`
 * or passed deadline takes effect there. Queued steers are injected (`steering-injected` with `ref`)
 * after a tool result, after a pause, and at the end of the turn's steps.
 */
export type TurnStep =
  /** Streams `assistant-thinking-delta` events (the text cut into `chunks` pieces over `ms`), then one `assistant-thinking`. */
  | { thinking: TextSpec; chunks?: number; ms?: number }
  /** Streams `assistant-text-delta` events (the text cut into `chunks` pieces over `ms`), then one non-final `assistant-text`. */
  | { text: TextSpec; chunks?: number; ms?: number }
  /**
   * A `tool-call`, then after `durationMs` a `tool-result` (`is-error?` = `error`, `duration-seconds`).
   * A cancel or finalize arriving while the tool runs pairs the call with a cancelled, error result.
   */
  | { tool: string; arguments?: JsonValue; result?: JsonValue; error?: boolean; durationMs?: number }
  /**
   * Waits `ms` mid-turn (the place for a steer to land); queued steers are injected when it ends. With
   * `untilControls: N` the pause ends early once the child has read N control lines since this turn's
   * `turn-started` (any line: acked, rejected or invalid); with `untilControl: type`, once it has read a control
   * of that type for this run since then (with both, once both hold). `ms` is then only a cap, so a test that
   * needs controls to land mid-turn waits for them, not for a clock.
   */
  | { pause: number; untilControls?: number; untilControl?: WireControlType }
  /** Runs a misbehaviour at this exact point of the turn (same actions as {@link Misbehaviour.do}). */
  | { misbehave: MisbehaviourAction | MisbehaviourAction[] }
  /**
   * An `error` event (`error`, `source?`), as a Fen child forwards its agent's errors. A provider that refused
   * the model call is `"HTTP 429: <body>"` (or 529): what Fen emits once its own retries are spent, which
   * subvisor reads as rate-limit news (end such a turn with `stopReason: 'error'`, as Fen does).
   */
  | { error: string; source?: string };

/** What one turn does, from `turn-started` to `turn-complete`. */
export interface TurnScript {
  /** Streamed in order before the answer. Default: none. */
  steps?: TurnStep[];
  /** The turn's final assistant text (one `assistant-text` with `final?` true). Default: `{ echo: true }`. */
  answer?: TextSpec;
  /** How the answer is streamed: cut into `chunks` text deltas over `ms` before the final text. Default: no deltas. */
  answerChunks?: number;
  answerMs?: number;
  /**
   * `false`: a streamed answer ends with its deltas, no whole `assistant-text` after them, as the real Fen
   * child sends a long answer (one delta cut to the transport bounds, Fen's note inside it). Default true.
   */
  answerWhole?: boolean;
  /**
   * Acknowledge steers: each steer injected before the answer is quoted in a sentence appended to the answer
   * (streamed as one more delta when the answer is streamed), so the answer shows the steer reached the agent.
   * Default false: the answer is exactly `answer`.
   */
  acknowledgeSteers?: boolean;
  /** `stop-reason` of the turn's `turn-complete` (and of `result` when it is the last turn). Default `"stop"`. */
  stopReason?: string;
  /**
   * The turn's usage, reported once by the turn's last `llm-end` and its `turn-complete`. Default: estimated from
   * text sizes, one model call per tool call plus the last: each call's `llm-end` carries
   * `{ input, output, cache-read: 0, cache-write: 0, total-tokens }`, and `turn-complete` their sum.
   */
  usage?: JsonObject;
}

/** Where in the run a misbehaviour fires. Each misbehaviour fires at most once. */
export type MisbehaviourPoint =
  /** At start-up, before `agent-started` and `ready` (controls are never read before `ready`). */
  | 'before-ready'
  /** Right after `ready`, before the first control read. */
  | 'after-ready'
  /** At the start of the first turn, right after its `turn-started`. */
  | 'turn-start'
  /** At the start of turn N (1-based), right after its `turn-started`. */
  | { turn: number }
  /** When the first control line is read, before it is acked. */
  | 'on-control'
  /** When the first valid control of this type for this run is read, before it is acked. */
  | { control: WireControlType }
  /** When the run is about to write `result` (only runs that end `done`). */
  | 'before-result'
  /** Right after the `exit` event, before the process would exit. */
  | 'after-exit';

/** A raw line the child writes instead of a well-formed event (each ends with a newline unless noted). */
export type RawLine =
  /** Not JSON. Default text: `this is not json {`. */
  | { kind: 'garbage'; text?: string }
  /** A JSON-ish line of `bytes` bytes (default 70000, at least 65536 so it is too large). */
  | { kind: 'oversized'; bytes?: number }
  /** A valid event re-using a seq that was already written (out-of-order). */
  | { kind: 'out-of-order' }
  /** A valid-looking event with `v` other than 1 (default 2): fatal for the parent. */
  | { kind: 'wrong-version'; v?: JsonValue }
  /** A valid event whose `run` is another run id (default `"another-run"`). */
  | { kind: 'foreign-run'; run?: string }
  /** An event whose `type` no protocol version knows (default `"mystery-event"`). */
  | { kind: 'unknown-type'; type?: string }
  /** A known event type with a payload that breaks its schema (a `turn-started` without `turn`). */
  | { kind: 'invalid-payload' }
  /** Exactly this text (a newline is appended unless `newline` is false). */
  | { kind: 'literal'; line: string; newline?: boolean };

/** A misbehaviour's effect. */
export type MisbehaviourAction =
  /** Exits with `code` (default 1); writes `exit {status, error}` first when `exitEvent` is true (default false). */
  | { crash: { code?: number; exitEvent?: boolean; status?: 'done' | 'cancelled' | 'failed' | 'timed-out' } }
  /** Stops everything (no control reads, no turn progress, no deadline) until killed or orphaned. */
  | 'hang'
  /** From now on SIGTERM is ignored (SIGKILL still works). */
  | 'ignore-sigterm'
  /**
   * Spawns `count` (default 1) grandchildren that ignore SIGTERM. `session: false` keeps them in the
   * child's process group; `session: true` starts each in its own session (setsid). Each one exits on its
   * own after `lifeMs` (default and maximum 60000), so no test can leak them for good. Each pid is
   * reported in an `info` event (extra fields `grandchild-pid`, `own-session?`, and `ready?`: whether its
   * SIGTERM handler was confirmed in place) and in the transcript. The turn waits (up to 30 s) for that
   * confirmation, so a SIGTERM sent after the `info` always meets the handler.
   */
  | { grandchildren: { count?: number; session?: boolean; lifeMs?: number } }
  /** Writes these lines (plus `repeat` copies of the list, default 1 pass). */
  | { raw: RawLine[]; repeat?: number }
  /** From now on control lines are read but never acked: `ignore` drops them, `apply` acts on them silently. */
  | { stopAcking: 'ignore' | 'apply' }
  /** At `before-result`: writes `exit done` with no `result` (exit code 0). Elsewhere: makes the eventual result be skipped. */
  | 'skip-result'
  /** Keeps the process alive `ms` (default: until killed, orphaned or `maxLifeMs`) after its `exit` event. */
  | { linger: { ms?: number } }
  /** Truncates the event file to `toBytes` (default 0) and goes on writing at the new end. */
  | { truncateEvents: { toBytes?: number } }
  /** From now on every event line is written in `pieces` (default 3) writes `gapMs` apart (default 5), cut inside multi-byte characters where the line has any. */
  | { splitWrites: { pieces?: number; gapMs?: number } }
  /**
   * Writes `count` `assistant-text-delta` events of about `bytes` bytes each (default 200), as fast as
   * possible or at `rate` events per second. `stamp: true` adds the extra field `"mono-ns"` =
   * `process.hrtime.bigint().toString()` taken right before each write (CLOCK_MONOTONIC, comparable
   * across processes). The transcript records a flood as one entry, not one per event.
   */
  | { flood: { count: number; bytes?: number; rate?: number; stamp?: boolean } }
  /** Sleeps `ms` here (controls and turns wait; parent death is still noticed). */
  | { delay: number }
  /** From now on the child ignores these (see {@link Scenario.ignore}). */
  | { ignore: Ignorable[] };

/** A misbehaviour placed at a point of the run. */
export interface Misbehaviour {
  at: MisbehaviourPoint;
  do: MisbehaviourAction | MisbehaviourAction[];
}

/**
 * Things a child can ignore for the whole run:
 * - `cancel`: acks it `accepted` but keeps running as if it never came;
 * - `finalize`: acks it `accepted` and switches to `finalizing` but never runs the final turn;
 * - `close`: acks it `accepted` but never finishes;
 * - `deadline`: never exits `timed-out`;
 * - `sigterm`: SIGTERM does nothing (only SIGKILL ends it).
 * Parent death is never ignored: a fake child always exits when its parent is gone.
 */
export type Ignorable = 'cancel' | 'finalize' | 'close' | 'deadline' | 'sigterm';

/**
 * What a fake child does, as plain JSON (pass it to `fakeChild()` or save it as a file for
 * `subvisor-fake-child path/to/scenario.json`). Every field is optional: `{}` is an echo child.
 */
export interface Scenario {
  /** A label for transcripts and errors. */
  name?: string;
  /** `agent-started` fields. Default `{ provider: 'fake', model: 'fake-1' }`. */
  agent?: { provider?: string; model?: string };
  /** Turn N runs `turns[N-1]`; turns past the end run the last entry. Default: one echo turn. */
  turns?: TurnScript[];
  /** The tool-free turn run after `finalize` (tool steps are skipped). Default: answers `Final answer: <last answer or note>`. */
  finalTurn?: TurnScript;
  /** Misbehaviours at chosen points of the run. */
  misbehaviours?: Misbehaviour[];
  /** Controls and signals ignored for the whole run. */
  ignore?: Ignorable[];
  /** Waits this long before `ready`. Default 0. */
  readyDelayMs?: number;
  /** Cadence override (the kit's options and env win over these). */
  turnTickMs?: number;
  idleTickMs?: number;
  /**
   * Keeps running when its parent dies, as a real Fen child does (it runs in its own session, so it does
   * not notice): for durable runs, whose child a later parent re-attaches to. Only `maxLifeMs` caps it
   * then. Default false: a fake child exits as soon as its parent (or the process that made it) is gone.
   */
  outlivesParent?: boolean;
  /**
   * Safety cap: after this long the child exits `failed` whatever it is doing (even when hung or
   * lingering). Default 600000 (10 minutes).
   */
  maxLifeMs?: number;
  /**
   * Plays a recorded run instead of the scenario (see `replayChild`): its events, its acks, its end.
   * Only `maxLifeMs` and `outlivesParent` of the scenario still apply.
   */
  replay?: ReplayScript;
  /** How a replay spaces its events. Default `compressed`. */
  replayTiming?: ReplayTiming;
}

/** The scenarios shipped with the kit (see `BUILTIN_SCENARIOS` for what each one does). */
export const BUILTIN_SCENARIO_NAMES = [
  'demo',
  'echo',
  'slow',
  'crash',
  'crash-silent',
  'stubborn',
  'huge-answer',
  'flood',
  'hang',
  'never-ready',
  'garbage',
  'grandchildren',
  'linger',
  'no-result',
  'version-mismatch',
  'foreign-run',
  'truncate-events',
  'split-writes',
  'stop-acking',
  'ignore-finalize',
  'ignore-deadline',
] as const;

export type BuiltinScenarioName = (typeof BUILTIN_SCENARIO_NAMES)[number];

export function isBuiltinScenarioName(value: unknown): value is BuiltinScenarioName {
  return typeof value === 'string' && (BUILTIN_SCENARIO_NAMES as readonly string[]).includes(value);
}
