// asAgent: an Agent Handler whose invoke runs one turn in a supervised child (a fresh run per invoke, or a keep-alive run per session).
import { duration, spawnRun } from '../api/spawn-run.js';
import { OPTION_KEYS as RUN_OPTION_KEYS } from '../api/option-checks.js';
import { refuseUnknownKeys } from '../text/option-keys.js';
import type { Ack, Run, RunOptions, StreamIterator } from '../api/types.js';
import { FreshTurn } from './fresh-turn.js';
import { InvokeStream } from './invoke-stream.js';
import type { TurnSource } from './invoke-stream.js';
import { KeepAliveSession, KeepAliveTurn } from './keep-alive.js';
import type { SessionHost } from './keep-alive.js';
import { SESSION_ENV } from './session-env.js';
import { closeRun } from './stop-run.js';
import { failed } from './terminal.js';
import type { Agent, AgentEvent, DispatchAck, DispatchCommand, Prompt, Scope } from './types.js';


/** Options of {@link asAgent}: those of `spawnRun` (but the task, which is each invoke's prompt), plus the agent's own. */
export type AgentOptions = Omit<RunOptions, 'task' | 'args' | 'keepAlive' | 'runId'> & {
  /** Arguments of the command: a list, or a function of the invoke's scope (to hand the session over as an argument). */
  args?: readonly string[] | ((scope: Scope) => readonly string[]);
  /**
   * `'fresh'` (default): each invoke runs in a new child, which gets `scope.session` in its environment
   * (see `sessionEnv`) so a child keeping its state outside the process can pick the conversation up.
   * `'keep-alive'`: one live run per session; each invoke is one prompt on it.
   */
  sessions?: 'fresh' | 'keep-alive';
  /** Keep-alive only: an idle session's run is closed after this long without an invoke. Default 300000 (5 min). */
  idleTimeoutMs?: number;
  /** When the consumer stops reading (`break`, `return()`): time between `cancel` and SIGKILL of the tree. Default 1000. */
  cancelGraceMs?: number;
  /** Name of the environment variable that carries `scope.session` to the child; `false` for none. Default `SUBVISOR_AGENT_SESSION`. */
  sessionEnv?: string | false;
  /**
   * Pass the child's events that have no Agent Handler meaning (lifecycle, acks, `info`, usage...) through as
   * non-terminal `{ type: 'run_event', event }` events. Default true.
   */
  runEvents?: boolean;
  /** How each run starts. Default `spawnRun`; a wrapper of your own, or a test's `createInMemoryRun`. */
  start?: (options: RunOptions) => Run;
};

/** An Agent Handler backed by supervised children. */
export interface SupervisedAgent extends Agent {
  invoke(scope: Scope, prompt: Prompt): StreamIterator<AgentEvent>;
  /**
   * The session control plane: acts on the run serving the invoke in flight on `session` (`steer`,
   * `follow_up`, `abort` = cancel) and resolves to its ack. Never rejects: a command with no run to act on
   * (no invoke in flight, empty text, the run ending) resolves `rejected` with a reason.
   */
  dispatch(session: string, command: DispatchCommand): Promise<DispatchAck>;
  /** Cancels the invokes in flight (they end `failed { code: 'aborted' }`), closes idle sessions; resolves once every tree is gone. Later invokes fail `agent_closed`. */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

const DEFAULTS = { idleTimeoutMs: 300_000, cancelGraceMs: 1000 } as const;

/** spawnRun's keys but those an invoke gives, and the agent's own. */
const AGENT_OPTION_KEYS = [
  ...RUN_OPTION_KEYS.filter((key) => key !== 'task' && key !== 'keepAlive' && key !== 'runId'),
  ...Object.keys({
    sessions: true,
    idleTimeoutMs: true,
    cancelGraceMs: true,
    sessionEnv: true,
    runEvents: true,
    start: true,
  } satisfies Record<Exclude<keyof AgentOptions, keyof RunOptions>, true>),
];

/** Builds an Agent Handler over supervised child runs. Throws a TypeError/RangeError on invalid agent options. */
export function asAgent(options: AgentOptions): SupervisedAgent {
  return new RunAgent(options);
}

function millis(name: string, value: unknown, fallback: number): number {
  return value === undefined ? fallback : duration(name, value);
}

/** Why an invoke's input is unusable, or undefined when it is fine. */
function inputProblem(scope: unknown, prompt: unknown): string | undefined {
  if (typeof scope !== 'object' || scope === null || typeof (scope as Scope).session !== 'string') {
    return 'scope must be an object with a string session';
  }
  if (typeof prompt !== 'object' || prompt === null || typeof (prompt as Prompt).text !== 'string') {
    return 'prompt must be an object with a string text';
  }
  return undefined;
}

class RunAgent implements SupervisedAgent, SessionHost {
  readonly #options: AgentOptions;
  readonly #keepAlive: boolean;
  readonly #idleTimeoutMs: number;
  readonly #cancelGraceMs: number;
  readonly #sessionEnv: string | false;
  readonly #runEvents: boolean;
  readonly #start: (options: RunOptions) => Run;
  /** Sessions with an invoke in flight, and the run serving it once there is one. */
  readonly #busy = new Map<string, Run | undefined>();
  /** keep-alive: each session's live run. */
  readonly #live = new Map<string, KeepAliveSession>();
  #closed = false;

  constructor(options: AgentOptions) {
    if (typeof options !== 'object' || options === null) throw new TypeError('asAgent needs an options object');
    refuseUnknownKeys(options, AGENT_OPTION_KEYS, 'asAgent');
    const sessions = options.sessions ?? 'fresh';
    if (sessions !== 'fresh' && sessions !== 'keep-alive') throw new TypeError("options.sessions must be 'fresh' or 'keep-alive'");
    const sessionEnv = options.sessionEnv ?? SESSION_ENV;
    if (sessionEnv !== false && (typeof sessionEnv !== 'string' || sessionEnv === '' || sessionEnv.includes('='))) {
      throw new TypeError('options.sessionEnv must be a variable name or false');
    }
    if (sessions === 'keep-alive' && options.outputSchema !== undefined) {
      // A keep-alive run outlives its invokes: its answer is checked only when the session's run ends.
      throw new TypeError("options.outputSchema needs sessions: 'fresh': each invoke's answer is checked when its run ends, and a keep-alive run outlives its invokes");
    }
    this.#options = options;
    this.#keepAlive = sessions === 'keep-alive';
    this.#idleTimeoutMs = millis('idleTimeoutMs', options.idleTimeoutMs, DEFAULTS.idleTimeoutMs);
    this.#cancelGraceMs = millis('cancelGraceMs', options.cancelGraceMs, DEFAULTS.cancelGraceMs);
    this.#sessionEnv = sessionEnv;
    this.#runEvents = options.runEvents ?? true;
    if (options.start !== undefined && typeof options.start !== 'function') throw new TypeError('options.start must be a function');
    this.#start = options.start ?? spawnRun;
  }

  invoke(scope: Scope, prompt: Prompt): StreamIterator<AgentEvent> {
    return new InvokeStream(() => this.#open(scope, prompt));
  }

  async #open(scope: Scope, prompt: Prompt): Promise<TurnSource | AgentEvent[]> {
    if (this.#closed) return [failed('agent_closed', 'the agent was closed', false)];
    const problem = inputProblem(scope, prompt);
    if (problem !== undefined) return [failed('invalid_input', problem, false)];
    const { session } = scope;
    if (this.#busy.has(session)) {
      return [failed('session_busy', `session ${JSON.stringify(session)} already has an invoke in flight`, true)];
    }
    // Reserved before anything is awaited: a second invoke on this session is busy from here on.
    this.#busy.set(session, undefined);
    try {
      if (this.#keepAlive) {
        const turn = new KeepAliveTurn(this, session, this.#runEvents, this.#cancelGraceMs);
        const early = await turn.start(prompt.text);
        if (early !== undefined) {
          this.release(session);
          return early;
        }
        this.#busy.set(session, turn.run);
        return turn;
      }
      const run = this.#spawn(scope, prompt.text, false);
      this.#busy.set(session, run);
      return new FreshTurn(run, this.#runEvents, this.#cancelGraceMs, () => this.release(session));
    } catch (error) {
      this.release(session);
      return [failed('invalid_options', (error as Error)?.message ?? String(error), false)];
    }
  }

  #spawn(scope: Scope, text: string, keepAlive: boolean): Run {
    const { sessions, idleTimeoutMs, cancelGraceMs, sessionEnv, runEvents, start, args, env, ...runOptions } = this.#options;
    const argv = typeof args === 'function' ? args(scope) : args;
    const childEnv = this.#sessionEnv === false ? env : { ...env, [this.#sessionEnv]: scope.session };
    return this.#start({ ...runOptions, args: argv, env: childEnv, task: text, keepAlive } as RunOptions);
  }

  async dispatch(session: string, command: DispatchCommand): Promise<DispatchAck> {
    const run = this.#busy.get(session);
    if (run === undefined || run.ended) return { status: 'rejected', reason: `no invoke is in flight for session ${JSON.stringify(session)}` };
    const type = (command as DispatchCommand | undefined)?.type;
    const text = command?.text;
    try {
      let ack: Ack;
      if (type === 'abort') ack = await run.cancel();
      else if (type !== 'steer' && type !== 'follow_up') return { status: 'rejected', reason: `unknown command type ${JSON.stringify(type)}` };
      else if (typeof text !== 'string' || text === '') return { status: 'rejected', reason: `${type} needs a non-empty text` };
      else ack = type === 'steer' ? await run.steer(text) : await run.followUp(text);
      const answer: DispatchAck = { status: ack.status, seq: ack.seq };
      if (ack.reason !== undefined) answer.reason = ack.reason;
      if (ack.delivery !== undefined) answer.delivery = ack.delivery;
      return answer;
    } catch (error) {
      return { status: 'rejected', reason: (error as Error)?.message ?? String(error) };
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    const work: Promise<unknown>[] = [];
    for (const run of this.#busy.values()) if (run !== undefined) work.push(run.terminate('the agent was closed'));
    for (const [session, live] of this.#live) {
      if (live.idleTimer !== undefined) clearTimeout(live.idleTimer);
      if (!this.#busy.has(session)) work.push(closeRun(live.run, this.#closeGraceMs(), 'the agent was closed'));
    }
    this.#live.clear();
    await Promise.all(work);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /* SessionHost: the keep-alive turns' view of the sessions. */

  liveSession(session: string): KeepAliveSession | undefined {
    const live = this.#live.get(session);
    if (live === undefined || !live.run.ended) return live;
    this.#live.delete(session);
    return undefined;
  }

  startSession(session: string, text: string): KeepAliveSession {
    const live = new KeepAliveSession(this.#spawn({ session }, text, true));
    this.#live.set(session, live);
    return live;
  }

  dropSession(session: string, live: KeepAliveSession): void {
    if (live.idleTimer !== undefined) clearTimeout(live.idleTimer);
    live.idleTimer = undefined;
    if (this.#live.get(session) === live) this.#live.delete(session);
  }

  release(session: string): void {
    this.#busy.delete(session);
    const live = this.#live.get(session);
    if (live === undefined || live.run.ended) return;
    if (this.#closed) {
      this.#live.delete(session);
      void closeRun(live.run, this.#closeGraceMs(), 'the agent was closed');
      return;
    }
    if (live.idleTimer !== undefined) clearTimeout(live.idleTimer);
    live.idleTimer = setTimeout(() => {
      live.idleTimer = undefined;
      if (this.#busy.has(session) || this.#live.get(session) !== live) return;
      this.#live.delete(session);
      void closeRun(live.run, this.#closeGraceMs(), 'the session was idle');
    }, this.#idleTimeoutMs);
    live.idleTimer.unref();
  }

  /** How long a closed session's child gets to exit on its own before it is terminated. */
  #closeGraceMs(): number {
    return Math.max(1000, this.#options.killGraceMs ?? 3000);
  }
}
