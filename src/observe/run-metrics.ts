// Metrics of runs, where they are cheap: runs started and ended by status, run duration, time to the first event, time per output chunk, token usage.
import { createNoopMeter, metrics } from '@opentelemetry/api';
import type { Attributes, Counter, Histogram, Meter } from '@opentelemetry/api';
import type { RunEvent } from '../protocol/events.js';
import type { Outcome } from '../protocol/outcome.js';
import { ERROR_TYPE, GEN_AI, INSTRUMENT, OPERATION, SCOPE, SUBVISOR } from './attributes.js';
import type { RunFacts } from './types.js';

/** The instruments of one meter. */
interface Instruments {
  started: Counter;
  ended: Counter;
  duration: Histogram;
  firstEvent: Histogram;
  perChunk: Histogram;
  tokens: Histogram;
}

/** Instruments by meter: created once for each meter an application registers (tests register several in turn). */
const instrumentsOf = new WeakMap<Meter, Instruments>();

/** The registered meter's instruments, or undefined when no meter provider is registered (the API's no-op meter). */
export function registeredInstruments(version: string): Instruments | undefined {
  const meter = metrics.getMeter(SCOPE, version);
  if (meter === createNoopMeter()) return undefined;
  let instruments = instrumentsOf.get(meter);
  if (instruments === undefined) {
    instruments = {
      started: meter.createCounter(INSTRUMENT.started, { unit: '{run}', description: 'Runs started' }),
      ended: meter.createCounter(INSTRUMENT.ended, { unit: '{run}', description: 'Runs ended, by status' }),
      duration: meter.createHistogram(INSTRUMENT.duration, { unit: 's', description: 'Run duration, start to outcome' }),
      firstEvent: meter.createHistogram(INSTRUMENT.firstEvent, { unit: 's', description: "Time from a run's start to the child's first event" }),
      perChunk: meter.createHistogram(INSTRUMENT.perChunk, {
        unit: 's',
        description: 'Time between consecutive chunks of assistant text within a turn',
      }),
      tokens: meter.createHistogram(INSTRUMENT.tokenUsage, { unit: '{token}', description: 'Tokens used by a run, by token type' }),
    };
    instrumentsOf.set(meter, instruments);
  }
  return instruments;
}

/** One run's measurements, recorded into the registered meter's instruments. */
export class RunMetrics implements Pick<RunFacts, 'event' | 'outcome'> {
  readonly #instruments: Instruments;
  readonly #attributes: Attributes;
  readonly #startedAt: number;
  #firstEventSeen = false;
  /** When the last chunk of assistant text came in the open turn (undefined between turns). */
  #lastChunkAt: number | undefined;
  #ended = false;

  constructor(instruments: Instruments, protocol: string, startedAt: number) {
    this.#instruments = instruments;
    this.#attributes = { [SUBVISOR.protocol]: protocol };
    this.#startedAt = startedAt;
    instruments.started.add(1, this.#attributes);
  }

  event(event: RunEvent): void {
    if (this.#ended) return;
    const now = performance.now();
    if (!this.#firstEventSeen) {
      this.#firstEventSeen = true;
      this.#instruments.firstEvent.record((now - this.#startedAt) / 1000, this.#attributes);
    }
    switch (event.type) {
      case 'turn-started':
      case 'turn-complete':
        this.#lastChunkAt = undefined;
        break;
      case 'assistant-text-delta':
      case 'assistant-text':
        if (this.#lastChunkAt !== undefined) this.#instruments.perChunk.record((now - this.#lastChunkAt) / 1000, this.#attributes);
        this.#lastChunkAt = now;
        break;
    }
  }

  outcome(outcome: Outcome): void {
    if (this.#ended) return;
    this.#ended = true;
    const ended: Attributes = { ...this.#attributes, [SUBVISOR.status]: outcome.status };
    if (outcome.errorCode !== undefined) ended[ERROR_TYPE] = outcome.errorCode;
    this.#instruments.ended.add(1, ended);
    this.#instruments.duration.record((performance.now() - this.#startedAt) / 1000, ended);
    const usage = outcome.usage;
    const tokens: Attributes = { ...this.#attributes, [GEN_AI.operation]: OPERATION.invokeAgent };
    if (usage?.inputTokens !== undefined) this.#instruments.tokens.record(usage.inputTokens, { ...tokens, [GEN_AI.tokenType]: 'input' });
    if (usage?.outputTokens !== undefined) this.#instruments.tokens.record(usage.outputTokens, { ...tokens, [GEN_AI.tokenType]: 'output' });
  }
}
