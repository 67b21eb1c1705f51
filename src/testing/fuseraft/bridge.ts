// `fuseraft run --bridge`: one orchestration session of agent turns, approvals and an interrupt, ending in `result`.
import { existsSync } from 'node:fs';
import { expandText } from '../text.js';
import type { FuseraftBridgeStep } from './scenario.js';
import { FuseraftSession, FUSERAFT_PROTOCOL_VERSION } from './session.js';
import type { InputLine, SessionConfig } from './session.js';
import type { FuseraftInputRole } from './transcript.js';

/** Exit code and message of a session cancelled by an interrupt or SIGINT. */
const CANCELLED_EXIT = 130;
const CANCELLED_MESSAGE = 'Session cancelled.';

export interface BridgeTarget {
  config: string;
  task?: string;
  resume?: string;
}

export class FuseraftBridge extends FuseraftSession {
  private readonly abort = new AbortController();
  private readonly sessionId: string;
  private turns = 0;
  private messageIndex = 0;
  private inputTokens = 0;
  private outputTokens = 0;

  constructor(
    config: SessionConfig,
    private readonly target: BridgeTarget,
  ) {
    super(config);
    this.sessionId = target.resume ?? config.scenario.sessionId ?? `fake-${process.pid}-${this.lifeline.started}`;
  }

  private get task(): string {
    return this.target.task ?? 'resumed session';
  }

  protected async begin(): Promise<void> {
    if (!existsSync(this.target.config)) {
      // A run that fails before it starts sends only `result`, with sessionId null.
      return this.finish({ succeeded: false, errorMessage: `Config file not found: ${this.target.config}`, exitCode: 1 }, null);
    }
    const steps = this.scenario.bridge ?? [{ agent: 'Coder', message: { echo: true, prefix: 'Done: ' } }];
    const agents = this.scenario.agents ?? [...new Set(steps.flatMap((step) => ('agent' in step ? [step.agent] : [])))];
    this.emit({
      type: 'ready',
      protocolVersion: this.scenario.protocolVersion ?? FUSERAFT_PROTOCOL_VERSION,
      sessionId: this.sessionId,
      task: this.task,
      config: this.target.config,
      resumed: this.target.resume !== undefined,
      agents: agents.length > 0 ? agents : ['Coder'],
    });
    const started = Date.now();
    for (const step of steps) {
      if (this.abort.signal.aborted || this.exiting) break;
      await this.runStep(step, started);
    }
    if (this.exiting) return;
    if (this.abort.signal.aborted) return this.finish({ succeeded: false, errorMessage: CANCELLED_MESSAGE, exitCode: CANCELLED_EXIT });
    const end = this.scenario.end ?? { succeeded: true };
    if (end.succeeded) return this.finish({ succeeded: true, errorMessage: null, exitCode: 0 });
    return this.finish({ succeeded: false, errorMessage: end.errorMessage, exitCode: end.exitCode ?? 1 });
  }

  private async runStep(step: FuseraftBridgeStep, started: number): Promise<void> {
    const signal = this.abort.signal;
    if ('agent' in step) {
      this.emit({ type: 'agent_starting', agent: step.agent });
      for (const tool of step.tools ?? []) this.emit({ type: 'tool_calling', agent: step.agent, tool: tool.name, argsSummary: tool.argsSummary ?? '' });
      await this.pause(step.ms ?? 0, signal);
      if (signal.aborted) return;
      const content = expandText(step.message, this.task);
      const usage = step.usage ?? { inputTokens: 1500 * (this.turns + 1), outputTokens: Math.ceil(content.length / 4) };
      this.turns += 1;
      this.inputTokens += usage.inputTokens ?? 0;
      this.outputTokens += usage.outputTokens ?? 0;
      const toolCalls = (step.tools ?? []).map((tool) => ({ name: tool.name, argsSummary: tool.argsSummary ?? '', succeeded: tool.succeeded ?? true }));
      this.agentMessage(step.agent, 'assistant', content, usage.inputTokens, usage.outputTokens, toolCalls, started);
    } else if ('orchestrator' in step) {
      this.agentMessage('Orchestrator', 'user', step.orchestrator, null, null, [], started);
    } else if ('budgetWarning' in step) {
      this.emit({ type: 'token_budget_warning', ...step.budgetWarning });
    } else if ('approval' in step) {
      const approved = await this.askApproval(step.approval);
      this.note(approved ? 'approved' : 'denied', { kind: step.approval.kind });
    } else {
      await this.commonStep(step, signal);
    }
  }

  private agentMessage(
    agentName: string,
    role: 'assistant' | 'user',
    content: string,
    inputTokens: number | null,
    outputTokens: number | null,
    toolCalls: Array<{ name: string; argsSummary: string; succeeded: boolean }>,
    started: number,
  ): void {
    const message = {
      agentName,
      role,
      content,
      turnIndex: this.messageIndex++,
      timestamp: new Date().toISOString(),
      inputTokens,
      outputTokens,
      isCompactionSummary: false,
      toolCalls,
    };
    this.emit({ type: 'agent_message', message, elapsedMs: Date.now() - started });
  }

  private finish(end: { succeeded: boolean; errorMessage: string | null; exitCode: number }, sessionId: string | null = this.sessionId): void {
    this.emit({
      type: 'result',
      sessionId,
      task: this.task,
      config: this.target.config,
      succeeded: end.succeeded,
      errorMessage: end.errorMessage,
      exitCode: end.exitCode,
      turns: this.turns,
      elapsedSeconds: Math.round(this.lifeline.now() / 10) / 100,
      inputTokens: this.inputTokens,
      outputTokens: this.outputTokens,
    });
    this.quit(end.exitCode);
  }

  /** The bridge reads only responses and interrupts: `user_input` and anything else is ignored. */
  protected onLine(_input: InputLine): FuseraftInputRole {
    return 'ignored';
  }

  protected onInterrupt(): FuseraftInputRole {
    if (this.abort.signal.aborted) return 'interrupt-idle';
    this.abort.abort();
    this.interruptPending();
    return 'interrupt';
  }

  protected onStdinEnd(): void {
    // The session goes on without input: a pending approval was denied.
  }
}
