// One run's span tree: the run's span (invoke_agent), a child span per turn and per tool call, and span events for states, controls, acks, kills and rejected lines.
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { Attributes, Context, Span, Tracer } from '@opentelemetry/api';
import type { RunEvent, ToolCallRunEvent, ToolResultRunEvent } from '../protocol/events.js';
import type { Outcome } from '../protocol/outcome.js';
import type { Usage } from '../wire/usage.js';
import { bounded, ERROR_TYPE, EVENT, GEN_AI, OPERATION, SPAN, SUBVISOR } from './attributes.js';
import type { AckFact, RunFacts } from './types.js';

/** An open tool call: its span, and what a result may name it by. */
interface OpenTool {
  span: Span;
  id: string | undefined;
  name: string;
}

/** The longest tool name put into a span name (the rest of the name is in `gen_ai.tool.name`). */
const MAX_TOOL_NAME_CHARS = 100;

/**
 * Maps one run's facts to spans. The run's span is started by the caller (its context is the child's
 * TRACEPARENT, known before the child starts); turns and tool calls become its children; everything
 * still open when the outcome comes ends with it, marked `subvisor.unfinished`.
 */
export class RunSpans implements RunFacts {
  readonly #tracer: Tracer;
  readonly #span: Span;
  readonly #context: Context;
  #turn: { span: Span; context: Context; number: number } | undefined;
  readonly #tools: OpenTool[] = [];
  #provider = false;
  #model = false;
  #ended = false;

  constructor(tracer: Tracer, span: Span, runContext: Context) {
    this.#tracer = tracer;
    this.#span = span;
    this.#context = runContext;
  }

  event(event: RunEvent): void {
    if (this.#ended) return;
    switch (event.type) {
      case 'turn-started':
        this.#startTurn(event.turn);
        break;
      case 'turn-complete':
        if (this.#turn === undefined || this.#turn.number !== event.turn) this.#startTurn(event.turn);
        this.#endTurn(event.stopReason, event.usage, event.error);
        break;
      case 'tool-call':
        this.#startTool(event);
        break;
      case 'tool-result':
        this.#endTool(event);
        break;
      case 'agent-started':
      case 'llm-start':
        this.#noteModel(event.provider, event.model);
        break;
      case 'rejected':
        this.#span.addEvent(EVENT.rejected, { [SUBVISOR.rejectedCode]: event.code, [SUBVISOR.rejectedFatal]: event.fatal });
        break;
      case 'error':
        this.#span.addEvent(EVENT.childError, event.error === undefined ? {} : { [SUBVISOR.childError]: bounded(event.error) });
        break;
    }
  }

  state(state: string, previous: string): void {
    if (!this.#ended) this.#span.addEvent(EVENT.state, { [SUBVISOR.state]: state, [SUBVISOR.previousState]: previous });
  }

  /** A control was written (its answer is a later `subvisor.control` event with the same seq). */
  controlSent(control: string, origin: string, seq: number): void {
    if (!this.#ended) this.#span.addEvent(EVENT.controlSent, { [SUBVISOR.controlType]: control, [SUBVISOR.controlOrigin]: origin, [SUBVISOR.controlSeq]: seq });
  }

  ack(ack: AckFact, control: string, origin: string): void {
    if (this.#ended) return;
    const attributes: Attributes = {
      [SUBVISOR.controlType]: control,
      [SUBVISOR.controlOrigin]: origin,
      [SUBVISOR.controlSeq]: ack.seq,
      [SUBVISOR.ackStatus]: ack.status,
    };
    if (ack.reason !== undefined) attributes[SUBVISOR.ackReason] = bounded(ack.reason);
    this.#span.addEvent(EVENT.control, attributes);
  }

  delivery(seq: number, delivery: string): void {
    if (!this.#ended) this.#span.addEvent(EVENT.delivery, { [SUBVISOR.controlSeq]: seq, [SUBVISOR.delivery]: delivery });
  }

  kill(step: { signal: string; pids: readonly number[] }): void {
    if (!this.#ended) this.#span.addEvent(EVENT.kill, { [SUBVISOR.killSignal]: step.signal, [SUBVISOR.killPids]: step.pids.length });
  }

  outcome(outcome: Outcome, pid?: number): void {
    if (this.#ended) return;
    this.#ended = true;
    for (const tool of this.#tools.splice(0)) endUnfinished(tool.span);
    if (this.#turn !== undefined) endUnfinished(this.#turn.span);
    this.#turn = undefined;
    const span = this.#span;
    const attributes: Attributes = {
      [SUBVISOR.status]: outcome.status,
      [SUBVISOR.turns]: outcome.turns,
      [SUBVISOR.truncated]: outcome.truncated,
      [SUBVISOR.rejectedLines]: outcome.rejectedLines,
      [SUBVISOR.killed]: outcome.killed,
      [SUBVISOR.escalated]: outcome.escalated,
      ...usageAttributes(outcome.usage),
    };
    if (outcome.errorCode !== undefined) attributes[SUBVISOR.errorCode] = outcome.errorCode;
    if (outcome.stopReason !== undefined) attributes[GEN_AI.finishReasons] = [outcome.stopReason];
    if (outcome.exitCode !== null) attributes[SUBVISOR.exitCode] = outcome.exitCode;
    if (outcome.signal !== null) attributes[SUBVISOR.exitSignal] = outcome.signal;
    if (pid !== undefined) attributes[SUBVISOR.childPid] = pid;
    span.setAttributes(attributes);
    if (isError(outcome)) {
      span.setAttribute(ERROR_TYPE, outcome.errorCode ?? outcome.status);
      span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.error === undefined ? outcome.status : bounded(outcome.error) });
    }
    span.end();
  }

  #startTurn(number: number): void {
    if (this.#turn !== undefined) endUnfinished(this.#turn.span);
    const span = this.#tracer.startSpan(SPAN.turn, { kind: SpanKind.INTERNAL, attributes: { [SUBVISOR.turnNumber]: number } }, this.#context);
    this.#turn = { span, context: trace.setSpan(this.#context, span), number };
  }

  #endTurn(stopReason: string, usage: Usage | undefined, error: string | undefined): void {
    const turn = this.#turn!;
    this.#turn = undefined;
    for (const tool of this.#tools.splice(0)) endUnfinished(tool.span);
    turn.span.setAttributes({ [GEN_AI.finishReasons]: [stopReason], ...usageAttributes(usage) });
    if (stopReason === 'error') {
      turn.span.setAttribute(ERROR_TYPE, 'turn_error');
      turn.span.setStatus({ code: SpanStatusCode.ERROR, message: error === undefined ? 'the turn ended with an error' : bounded(error) });
    }
    turn.span.end();
  }

  #startTool(event: ToolCallRunEvent): void {
    const name = typeof event.name === 'string' && event.name !== '' ? event.name : 'tool';
    const attributes: Attributes = { [GEN_AI.operation]: OPERATION.executeTool, [GEN_AI.toolName]: bounded(name) };
    if (event.id !== undefined) attributes[GEN_AI.toolCallId] = bounded(event.id);
    const parent = this.#turn?.context ?? this.#context;
    const span = this.#tracer.startSpan(`${SPAN.tool} ${name.slice(0, MAX_TOOL_NAME_CHARS)}`, { kind: SpanKind.INTERNAL, attributes }, parent);
    this.#tools.push({ span, id: event.id, name });
  }

  /** Ends the call a result names: by its call id, else the oldest open call of that tool. */
  #endTool(event: ToolResultRunEvent): void {
    const id = event.toolCallId ?? event.id;
    let index = id === undefined ? -1 : this.#tools.findIndex((tool) => tool.id === id);
    if (index === -1) index = this.#tools.findIndex((tool) => tool.name === event.name);
    if (index === -1) return;
    const [tool] = this.#tools.splice(index, 1);
    if (event.isError) {
      tool!.span.setAttribute(ERROR_TYPE, 'tool_error');
      tool!.span.setStatus({ code: SpanStatusCode.ERROR, message: 'the tool reported an error' });
    }
    tool!.span.end();
  }

  /** The provider and model the child named first go on the run's span. */
  #noteModel(provider: string | undefined, model: string | undefined): void {
    if (!this.#provider && provider !== undefined) {
      this.#provider = true;
      this.#span.setAttribute(GEN_AI.provider, bounded(provider));
    }
    if (!this.#model && model !== undefined) {
      this.#model = true;
      this.#span.setAttribute(GEN_AI.requestModel, bounded(model));
    }
  }
}

/** The run ended badly by its own fault: failed, timed out, or stalled (a caller's cancel is not an error). */
function isError(outcome: Outcome): boolean {
  return outcome.status === 'failed' || outcome.status === 'timed-out' || outcome.errorCode === 'stalled';
}

function endUnfinished(span: Span): void {
  span.setAttribute(SUBVISOR.unfinished, true);
  span.end();
}

/** A usage record in the GenAI conventions' names (cost in subvisor's own: the conventions have none). */
export function usageAttributes(usage: Usage | undefined): Attributes {
  const attributes: Attributes = {};
  if (usage === undefined) return attributes;
  if (usage.inputTokens !== undefined) attributes[GEN_AI.inputTokens] = usage.inputTokens;
  if (usage.outputTokens !== undefined) attributes[GEN_AI.outputTokens] = usage.outputTokens;
  if (usage.cacheReadTokens !== undefined) attributes[GEN_AI.cacheReadTokens] = usage.cacheReadTokens;
  if (usage.cacheWriteTokens !== undefined) attributes[GEN_AI.cacheCreationTokens] = usage.cacheWriteTokens;
  if (usage.costUsd !== undefined) attributes[SUBVISOR.costUsd] = usage.costUsd;
  return attributes;
}
