// The names subvisor's telemetry uses: span names, attributes (GenAI semantic conventions where they fit, `subvisor.*` otherwise), events and instruments.

/** The instrumentation scope of every tracer and meter subvisor asks for. */
export const SCOPE = 'subvisor';

/** GenAI semantic conventions (Development status): the names this instrumentation emits. */
export const GEN_AI = {
  operation: 'gen_ai.operation.name',
  agentName: 'gen_ai.agent.name',
  provider: 'gen_ai.provider.name',
  requestModel: 'gen_ai.request.model',
  finishReasons: 'gen_ai.response.finish_reasons',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  cacheReadTokens: 'gen_ai.usage.cache_read.input_tokens',
  cacheCreationTokens: 'gen_ai.usage.cache_creation.input_tokens',
  toolName: 'gen_ai.tool.name',
  toolCallId: 'gen_ai.tool.call.id',
  tokenType: 'gen_ai.token.type',
} as const;

/** `gen_ai.operation.name` values: the run invokes an agent, a tool call executes a tool. */
export const OPERATION = { invokeAgent: 'invoke_agent', executeTool: 'execute_tool' } as const;

/** The stable `error.type` attribute (set with an error status). */
export const ERROR_TYPE = 'error.type';

/** subvisor's own attributes: what the GenAI conventions have no name for. */
export const SUBVISOR = {
  protocol: 'subvisor.protocol',
  runId: 'subvisor.run.id',
  attempt: 'subvisor.run.attempt',
  status: 'subvisor.run.status',
  errorCode: 'subvisor.run.error_code',
  turns: 'subvisor.run.turns',
  truncated: 'subvisor.run.truncated',
  rejectedLines: 'subvisor.run.rejected_lines',
  killed: 'subvisor.run.killed',
  escalated: 'subvisor.run.escalated',
  costUsd: 'subvisor.usage.cost_usd',
  childPid: 'subvisor.child.pid',
  exitCode: 'process.exit.code',
  exitSignal: 'subvisor.child.signal',
  turnNumber: 'subvisor.turn.number',
  unfinished: 'subvisor.unfinished',
  state: 'subvisor.state',
  previousState: 'subvisor.state.previous',
  controlType: 'subvisor.control.type',
  controlOrigin: 'subvisor.control.origin',
  controlSeq: 'subvisor.control.seq',
  ackStatus: 'subvisor.ack.status',
  ackReason: 'subvisor.ack.reason',
  delivery: 'subvisor.control.delivery',
  killSignal: 'subvisor.kill.signal',
  killPids: 'subvisor.kill.pids',
  rejectedCode: 'subvisor.rejected.code',
  rejectedFatal: 'subvisor.rejected.fatal',
  childError: 'subvisor.child.error',
} as const;

/** Span names: the GenAI conventions' for the run and its tool calls; a turn has no convention of its own. */
export const SPAN = { run: 'invoke_agent', turn: 'turn', tool: 'execute_tool' } as const;

/** Span events on the run's span. */
export const EVENT = {
  state: 'subvisor.state',
  control: 'subvisor.control',
  controlSent: 'subvisor.control.sent',
  delivery: 'subvisor.control.delivery',
  kill: 'subvisor.kill',
  rejected: 'subvisor.rejected',
  childError: 'subvisor.child.error',
} as const;

/** Metric instruments. */
export const INSTRUMENT = {
  started: 'subvisor.runs.started',
  ended: 'subvisor.runs.ended',
  duration: 'subvisor.run.duration',
  firstEvent: 'subvisor.run.time_to_first_event',
  perChunk: 'subvisor.run.time_per_output_chunk',
  tokenUsage: 'gen_ai.client.token.usage',
} as const;

/** Longest string put into an attribute (the child's text is untrusted and may be huge). */
export const MAX_ATTRIBUTE_CHARS = 1024;

/** `text`, cut to {@link MAX_ATTRIBUTE_CHARS}. */
export function bounded(text: string): string {
  return text.length <= MAX_ATTRIBUTE_CHARS ? text : `${text.slice(0, MAX_ATTRIBUTE_CHARS)}…`;
}
