// Parent shutdown: while any run is alive, one set of SIGINT/SIGTERM/SIGHUP/exit handlers reaps every live tree.
import { watchRun } from './watchdog.js';
import type { WatchEntry } from './watchdog.js';

/** What the registry needs from a live run. */
export interface ShutdownParticipant {
  /** Cancels the run and reaps its tree with `graceMs` per ladder step; resolves when the tree is gone. */
  shutdown(graceMs: number): Promise<unknown>;
  /** Synchronously SIGKILLs whatever is left of the tree and removes the run's files. */
  killNow(): void;
}

/** Grace per ladder step when the parent itself is being stopped: short, the user is waiting. */
const SHUTDOWN_GRACE_MS = 1000;
/** Hard cap on the whole shutdown before the process goes down anyway. */
const SHUTDOWN_CAP_MS = 5000;

/**
 * Every live run (all are SIGKILLed on 'exit'), whether it wants the signal handling, and how to
 * take it off the watchdog (which reaps it should the parent die by SIGKILL, where no hook runs).
 */
const participants = new Map<ShutdownParticipant, { signals: boolean; durable: boolean; unwatch: () => void }>();
let exitHookInstalled = false;
let signalHooksInstalled = false;
let stopping = false;

function onExit(): void {
  // A durable run outlives its parent by design: its lease, and the watchdog behind it, decide its end.
  for (const [participant, flags] of participants) if (!flags.durable) participant.killNow();
}

function onSignal(signal: NodeJS.Signals): void {
  const handled = [...participants].filter(([, flags]) => flags.signals && !flags.durable).map(([participant]) => participant);
  if (stopping) {
    // A second signal: stop waiting.
    for (const participant of handled) participant.killNow();
    reraise(signal);
    return;
  }
  stopping = true;
  const all = Promise.allSettled(handled.map((participant) => participant.shutdown(SHUTDOWN_GRACE_MS)));
  const cap = new Promise((resolve) => setTimeout(resolve, SHUTDOWN_CAP_MS).unref());
  void Promise.race([all, cap]).then(() => {
    for (const participant of handled) participant.killNow();
    reraise(signal);
  });
}

/**
 * Lets the process do what it would have done without our handler: with no other listener for the
 * signal, die by it (exit status 128 + signal number: 129 for SIGHUP, 130 for SIGINT, 143 for SIGTERM).
 * With other listeners the process would not have died, so it goes on.
 */
function reraise(signal: NodeJS.Signals): void {
  stopping = false;
  uninstallSignalHooks();
  if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
  else refresh();
}

/**
 * The signals that end a process by default and that a user or the system sends to stop it: Ctrl-C,
 * `kill`, and SIGHUP (a terminal closed, an SSH session dropped). SIGKILL cannot be caught: the
 * watchdog covers it.
 */
const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
const signalHandlers = new Map(STOP_SIGNALS.map((signal) => [signal, () => onSignal(signal)]));

function uninstallSignalHooks(): void {
  if (!signalHooksInstalled) return;
  signalHooksInstalled = false;
  for (const [signal, handler] of signalHandlers) process.off(signal, handler);
}

/** Installs exactly the hooks the live runs need, and nothing when no run is alive. */
function refresh(): void {
  const wantExit = [...participants.values()].some((flags) => !flags.durable);
  const wantSignals = [...participants.values()].some((flags) => flags.signals && !flags.durable);
  if (wantExit && !exitHookInstalled) process.on('exit', onExit);
  if (!wantExit && exitHookInstalled) process.off('exit', onExit);
  exitHookInstalled = wantExit;
  if (stopping) return; // keep the signal hooks until the shutdown in progress is over
  if (wantSignals && !signalHooksInstalled) {
    signalHooksInstalled = true;
    for (const [signal, handler] of signalHandlers) process.on(signal, handler);
  }
  if (!wantSignals) uninstallSignalHooks();
}

/**
 * Adds a live run. With `signals` (the default of `handleParentSignals`) SIGINT/SIGTERM/SIGHUP of the
 * parent cancel and reap it; every live run is SIGKILLed when the process exits, but a `durable` one,
 * which outlives the parent (signals and exit alike) until its lease runs out.
 */
export function registerLiveRun(participant: ShutdownParticipant, signals: boolean, durable = false): void {
  participants.set(participant, { signals, durable, unwatch: () => undefined });
  refresh();
}

/**
 * The live run's process started: the watchdog reaps its tree and removes its files should the parent
 * die without running any hook. Forgotten by {@link unregisterLiveRun}.
 */
export function watchLiveRun(participant: ShutdownParticipant, watch: WatchEntry): void {
  const record = participants.get(participant);
  if (record === undefined) return;
  record.unwatch();
  record.unwatch = watchRun(watch);
}

/** Removes a finished run (its files already removed); the hooks go with the last one. */
export function unregisterLiveRun(participant: ShutdownParticipant): void {
  participants.get(participant)?.unwatch();
  participants.delete(participant);
  refresh();
}
