// The terms a task-shaped run works under, for the core to consult at the few points where facts arrive: its budget and its output schema.
import type { Usage } from '../wire/index.js';
import type { BudgetAction } from '../protocol/budget.js';
import type { Control, Protocol, ProtocolCapabilities, TurnReport } from '../protocol/driver.js';
import type { Ack } from './handle.js';
import type { ResolvedRunOptions } from '../protocol/resolved-options.js';
import type { FinalVerdict, TermsFields, Verdict } from './outcome.js';
import { OutputContract } from './output-contract.js';
import { compileOutputSchema } from './output-schema.js';
import { BudgetMeter } from './run-budget.js';
import { SharedBudgetAccount } from './shared-budget.js';

/** What the terms may do to the run they govern (the core's own controls and its one stop path). */
export interface GovernedRun {
  /** Controls can still be sent, and no close is on its way: the run is not ending. */
  readonly stoppable: boolean;
  /** Ready, with no turn open, every control answered and nothing waiting to be injected. */
  readonly idle: boolean;
  /** Sends the core's own close (the automatic close's, which then never comes again). */
  close(): void;
  /** Sends a control of the core's own: its ack, or undefined when it could not be sent. */
  send(control: Control): Promise<Ack> | undefined;
  /** Cancels the run with this verdict; the kill ladder follows. */
  cancel(verdict: Verdict): void;
}

/** Undefined for a run with neither a budget nor an output schema: the core then pays nothing for them. */
export function termsOf(options: ResolvedRunOptions, protocol: Protocol, run: GovernedRun): TaskTerms | undefined {
  if (options.budget === undefined && options.sharedBudget === undefined && options.outputSchema === undefined) return undefined;
  return new TaskTerms(options, protocol, run);
}

export class TaskTerms {
  readonly #run: GovernedRun;
  readonly #capabilities: ProtocolCapabilities;
  readonly #meter: BudgetMeter | undefined;
  /** The shared budget the run draws on. */
  readonly #account: SharedBudgetAccount | undefined;
  readonly #output: OutputContract | undefined;

  constructor(options: ResolvedRunOptions, protocol: Protocol, run: GovernedRun) {
    this.#run = run;
    this.#capabilities = protocol.capabilities;
    const shared = options.sharedBudget;
    if (options.budget !== undefined || shared !== undefined) {
      // spawnRun accepts only shared budgets made by sharedBudget(): accounts.
      this.#account = shared instanceof SharedBudgetAccount ? shared : undefined;
      this.#meter = new BudgetMeter(options.budget ?? {}, this.#account, protocol.reports, (reason) => this.#stop(reason));
    }
    if (options.outputSchema !== undefined) {
      this.#output = new OutputContract(compileOutputSchema(options.outputSchema), protocol.capabilities.continueConversation);
    }
  }

  /**
   * The shared budget was spent before the run started: the verdict of a run that never starts (the
   * limit is recorded), or undefined.
   */
  spentBeforeStart(): Verdict | undefined {
    if (this.#account?.exceeded === undefined || this.#meter === undefined) return undefined;
    return { status: 'cancelled', code: 'budget-exceeded', error: this.#meter.notStarted() };
  }

  toolCalled(): void {
    this.#meter?.toolCalled();
  }

  /**
   * A budget limit was reached: the run is asked for its answer now (or closed, or cancelled), so no tool may run
   * any more. The core answers the agent's approval requests with a denial from then on, whatever `approve` says:
   * an agent that calls a tool in the turn the finalize asked to be tool-free (Claude Code and Codex do, when the
   * model insists) spends nothing more.
   */
  get spent(): boolean {
    return this.#meter?.exceeded !== undefined;
  }

  modelCallEnded(usage: Usage): void {
    this.#meter?.modelCallEnded(usage);
  }

  /** After the core applied the turn (its state moved): the limits are checked in the state the child is now in. */
  turnCompleted(report: TurnReport): void {
    this.#output?.turnAnswered(report.answer);
    this.#meter?.turnCompleted(report.usage);
  }

  /** Before the automatic close: the repair turn's prompt, or undefined to close. */
  repairBeforeClose(): string | undefined {
    return this.#output?.repairBeforeClose(this.#meter?.exceeded !== undefined);
  }

  /** The final verdict with the terms applied (`budget-exceeded`, `invalid-output`), and the outcome fields they add. */
  judge(verdict: FinalVerdict, finalText: string | undefined): { verdict: FinalVerdict; fields: TermsFields } {
    const fields: TermsFields = {};
    let judged = verdict;
    if (this.#output !== undefined) {
      const output = this.#output.judge(judged, finalText);
      judged = output.verdict;
      if (output.data !== undefined) fields.data = output.data;
      if (output.errors !== undefined) fields.outputErrors = output.errors;
    }
    // The budget last: a run that reached a limit and did not end done is budget-exceeded whatever came after
    // (an answer the finalize asked for that fails the schema included), its error saying the limit, then that.
    if (this.#meter !== undefined) {
      judged = this.#meter.judge(judged);
      fields.budget = this.#meter.report();
    }
    return { verdict: judged, fields };
  }

  /**
   * A budget limit was reached: a run idle with its answer is closed; a working one is asked for its
   * answer now where the protocol can (finalize), else cancelled (and when the finalize is refused); the
   * kill ladder stands behind each. Undefined when the run is already ending.
   */
  #stop(reason: string): BudgetAction | undefined {
    const run = this.#run;
    if (!run.stoppable) return undefined;
    if (run.idle) {
      run.close();
      return 'close';
    }
    const verdict: Verdict = { status: 'cancelled', code: 'budget-exceeded', error: `${reason}; cancelled` };
    const shape = this.#output === undefined ? '' : ' in the JSON shape the task asked for';
    const note = `${reason}. Stop working on the task now and do not call any more tools: give your final answer${shape}.`;
    const finalizing = this.#capabilities.finalize ? run.send({ type: 'finalize', note }) : undefined;
    if (finalizing === undefined) {
      run.cancel(verdict);
      return 'cancel';
    }
    void finalizing.then((ack) => {
      if (ack.status === 'accepted' || ack.status === 'applied') return;
      // Refused or unanswered: the run is cancelled after all, and its report says so.
      const exceeded = this.#meter?.exceeded;
      if (exceeded !== undefined) exceeded.action = 'cancel';
      run.cancel(verdict);
    });
    return 'finalize';
  }
}
