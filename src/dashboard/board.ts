// The dashboard's model: a row per run (state, task, elapsed, turns, tokens, cost, last event), each run's recent events and its answer, and the changes the pages are sent, coalesced.
import type { Outcome, RunEvent } from '../api/types.js';
import { addCost } from '../wire/usage.js';
import type { Usage } from '../wire/usage.js';
import { ANSWER_CHARS, cut, shownEvent, shownOutcome, summary, TASK_CHARS } from './shown.js';
import type { ShownEvent, ShownOutcome } from './shown.js';
import type { BoardControls, BoardEntry, BoardGate, BoardSource } from './source.js';

/** One run's row. */
export interface BoardRow {
  id: string;
  label: string;
  /** The task's start (the whole task is in the run's detail). */
  task: string;
  attempt: number;
  state: string;
  queuedAt: number;
  startedAt: number | null;
  endedAt: number | null;
  turns: number;
  inputTokens: number;
  outputTokens: number;
  costUsd: number | null;
  lastEvent: string;
  lastEventAt: number | null;
  status: string | null;
  errorCode: string | null;
}

/** One run in full, for its panel. */
export interface RunDetail {
  row: BoardRow;
  task: string;
  /** The recent events (at most {@link EVENTS_KEPT}); `dropped` older ones are gone. */
  events: ShownEvent[];
  dropped: number;
  outcome: ShownOutcome | null;
  answer: string | null;
}

/** What a run's panel is sent as the run goes on. */
export interface RunUpdate {
  row?: BoardRow;
  events?: ShownEvent[];
  outcome?: ShownOutcome;
  answer?: string | null;
}

/** The events kept per run for its panel. */
export const EVENTS_KEPT = 500;
/** Longest task start shown in a row. */
const ROW_TASK_CHARS = 300;
/** How long changes gather before the pages are sent them. */
const FLUSH_MS = 150;

interface Tracked {
  row: BoardRow;
  task: string;
  events: ShownEvent[];
  count: number;
  outcome: ShownOutcome | null;
  answer: string | null;
  controls: BoardControls;
  stop: () => void;
  /** Events and news not yet sent to the run's panels. */
  pending: RunUpdate | undefined;
}

/** Follows a source's runs and keeps what the pages show, bounded: at most `maxRuns` ended runs are kept. */
export class Board {
  readonly kind: 'pool' | 'queue';
  readonly #source: BoardSource;
  readonly #maxRuns: number;
  readonly #runs = new Map<string, Tracked>();
  readonly #rowListeners = new Set<(changed: BoardRow[], removed: string[]) => void>();
  readonly #runListeners = new Map<string, Set<(update: RunUpdate) => void>>();
  readonly #changed = new Set<string>();
  readonly #removed: string[] = [];
  #flushTimer: NodeJS.Timeout | undefined;
  #stopSource: (() => void) | undefined;
  #stopGates: (() => void) | undefined;
  /** The source's rate-limit gates that are not open, and whether the pages have yet to be sent them. */
  #gates: BoardGate[] = [];
  #gatesChanged = false;

  constructor(source: BoardSource, maxRuns: number) {
    this.kind = source.kind;
    this.#source = source;
    this.#maxRuns = maxRuns;
  }

  /** Starts following the source's runs. */
  start(): void {
    this.#stopSource = this.#source.follow((entry) => this.#track(entry));
    this.#stopGates = this.#source.followGates?.((gates) => {
      this.#gates = gates;
      this.#gatesChanged = true;
      this.#scheduleFlush();
    });
  }

  /** Stops following anything; no more changes are sent. */
  close(): void {
    this.#stopSource?.();
    this.#stopGates?.();
    for (const tracked of this.#runs.values()) tracked.stop();
    if (this.#flushTimer !== undefined) clearTimeout(this.#flushTimer);
    this.#flushTimer = undefined;
    this.#rowListeners.clear();
    this.#runListeners.clear();
  }

  /** The rate-limit gates that are not open (a pool's; none for a queue). */
  gates(): BoardGate[] {
    return this.#gates;
  }

  rows(): BoardRow[] {
    return [...this.#runs.values()].map((tracked) => tracked.row);
  }

  counts(): Record<string, number> {
    const own = this.#source.counts?.();
    if (own !== undefined) return own;
    const counts: Record<string, number> = {};
    for (const { row } of this.#runs.values()) counts[row.status ?? row.state] = (counts[row.status ?? row.state] ?? 0) + 1;
    return counts;
  }

  detail(id: string): RunDetail | undefined {
    const tracked = this.#runs.get(id);
    if (tracked === undefined) return undefined;
    const { row, task, events, count, outcome, answer } = tracked;
    return { row, task, events: [...events], dropped: count - events.length, outcome, answer };
  }

  controls(id: string): BoardControls | undefined {
    return this.#runs.get(id)?.controls;
  }

  /** Changed and removed rows (and the gates, when they changed), at most every {@link FLUSH_MS}. */
  onRows(listener: (changed: BoardRow[], removed: string[]) => void): () => void {
    this.#rowListeners.add(listener);
    return () => this.#rowListeners.delete(listener);
  }

  /** One run's news (its new events, its row, its outcome and answer), at most every {@link FLUSH_MS}. */
  onRun(id: string, listener: (update: RunUpdate) => void): () => void {
    let listeners = this.#runListeners.get(id);
    if (listeners === undefined) this.#runListeners.set(id, (listeners = new Set()));
    listeners.add(listener);
    return () => {
      listeners.delete(listener);
      if (listeners.size === 0) this.#runListeners.delete(id);
    };
  }

  #track(entry: BoardEntry): void {
    if (this.#runs.has(entry.id)) return;
    const now = Date.now();
    const row: BoardRow = {
      id: entry.id,
      label: entry.label,
      task: cut(entry.task ?? '', ROW_TASK_CHARS),
      attempt: entry.attempt,
      state: entry.state,
      queuedAt: now,
      startedAt: entry.state === 'queued' ? null : now,
      endedAt: null,
      turns: 0,
      inputTokens: 0,
      outputTokens: 0,
      costUsd: null,
      lastEvent: '',
      lastEventAt: null,
      status: null,
      errorCode: null,
    };
    const tracked: Tracked = {
      row,
      task: cut(entry.task ?? '', TASK_CHARS),
      events: [],
      count: 0,
      outcome: null,
      answer: null,
      controls: entry.controls,
      stop: () => undefined,
      pending: undefined,
    };
    this.#runs.set(entry.id, tracked);
    this.#changedRow(tracked);
    tracked.stop = entry.follow({
      event: (event) => this.#onEvent(tracked, event),
      state: (state) => {
        tracked.row = { ...tracked.row, state, startedAt: tracked.row.startedAt ?? (state === 'queued' ? null : Date.now()) };
        this.#changedRow(tracked);
      },
      outcome: (outcome) => this.#onOutcome(tracked, outcome),
    });
  }

  #onEvent(tracked: Tracked, event: RunEvent): void {
    const now = Date.now();
    const shown = shownEvent(event, ++tracked.count, now);
    tracked.events.push(shown);
    if (tracked.events.length > EVENTS_KEPT) tracked.events.splice(0, tracked.events.length - EVENTS_KEPT);
    const row = { ...tracked.row, lastEventAt: now };
    const said = summary(event);
    if (event.type !== 'assistant-text-delta' && event.type !== 'assistant-thinking-delta') row.lastEvent = said === '' ? event.type : `${event.type}: ${said}`;
    else row.lastEvent = event.type === 'assistant-text-delta' ? 'writing' : 'thinking';
    if (event.type === 'turn-started') row.turns = Math.max(row.turns, event.turn);
    if (event.type === 'turn-complete') {
      row.turns = Math.max(row.turns, event.turn);
      addUsage(row, event.usage);
    }
    tracked.row = row;
    const pending = ((tracked.pending ??= {}).events ??= []);
    pending.push(shown);
    // A run faster than the flush: its panel gets the latest ones (the detail it reloads has the rest it keeps).
    if (pending.length > EVENTS_KEPT) pending.splice(0, pending.length - EVENTS_KEPT);
    this.#changedRow(tracked);
  }

  #onOutcome(tracked: Tracked, outcome: Outcome): void {
    const row: BoardRow = {
      ...tracked.row,
      state: outcome.status,
      status: outcome.status,
      errorCode: outcome.errorCode ?? null,
      endedAt: Date.now(),
      turns: Math.max(tracked.row.turns, outcome.turns),
    };
    // The outcome's usage is the run's own total (the turns' sum, or the child's result): it replaces the running sum.
    if (outcome.usage !== undefined) {
      row.inputTokens = 0;
      row.outputTokens = 0;
      row.costUsd = null;
      addUsage(row, outcome.usage);
    }
    tracked.row = row;
    tracked.outcome = shownOutcome(outcome);
    tracked.answer = outcome.finalText === undefined ? null : cut(outcome.finalText, ANSWER_CHARS);
    const pending = (tracked.pending ??= {});
    pending.outcome = tracked.outcome;
    pending.answer = tracked.answer;
    this.#changedRow(tracked);
    this.#evict();
  }

  /** Past `maxRuns` ended runs, the oldest ended ones go. */
  #evict(): void {
    const ended = [...this.#runs.values()].filter((tracked) => tracked.row.endedAt !== null);
    for (const tracked of ended.slice(0, Math.max(0, ended.length - this.#maxRuns))) {
      this.#runs.delete(tracked.row.id);
      this.#changed.delete(tracked.row.id);
      this.#removed.push(tracked.row.id);
      this.#scheduleFlush();
    }
  }

  #changedRow(tracked: Tracked): void {
    this.#changed.add(tracked.row.id);
    (tracked.pending ??= {}).row = tracked.row;
    this.#scheduleFlush();
  }

  #scheduleFlush(): void {
    if (this.#flushTimer !== undefined) return;
    this.#flushTimer = setTimeout(() => this.#flush(), FLUSH_MS);
    // A board never keeps the process alive by itself: the server it belongs to does.
    this.#flushTimer.unref();
  }

  #flush(): void {
    this.#flushTimer = undefined;
    const changed = [...this.#changed].flatMap((id) => {
      const tracked = this.#runs.get(id);
      return tracked === undefined ? [] : [tracked.row];
    });
    const removed = this.#removed.splice(0);
    this.#changed.clear();
    const gatesChanged = this.#gatesChanged;
    this.#gatesChanged = false;
    for (const tracked of this.#runs.values()) {
      const update = tracked.pending;
      tracked.pending = undefined;
      if (update === undefined) continue;
      for (const listener of this.#runListeners.get(tracked.row.id) ?? []) listener(update);
    }
    if (changed.length > 0 || removed.length > 0 || gatesChanged) for (const listener of this.#rowListeners) listener(changed, removed);
  }
}

/** Adds a usage record's tokens and cost to a row. */
function addUsage(row: BoardRow, usage: Usage | undefined): void {
  if (usage === undefined) return;
  row.inputTokens += usage.inputTokens ?? 0;
  row.outputTokens += usage.outputTokens ?? 0;
  if (usage.costUsd !== undefined) row.costUsd = addCost(row.costUsd ?? 0, usage.costUsd);
}
