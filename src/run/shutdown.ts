// Parent shutdown: while any run is alive, one set of SIGINT/SIGTERM/exit handlers reaps every live tree.

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

/** Every live run (all are SIGKILLed on 'exit'), and whether it wants the signal handling. */
const participants = new Map<ShutdownParticipant, { signals: boolean }>();
let exitHookInstalled = false;
let signalHooksInstalled = false;
let stopping = false;

function onExit(): void {
  for (const participant of participants.keys()) participant.killNow();
}

function onSignal(signal: NodeJS.Signals): void {
  const handled = [...participants].filter(([, flags]) => flags.signals).map(([participant]) => participant);
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
 * signal, die by it (exit status 128 + signal number: 130 for SIGINT, 143 for SIGTERM). With other
 * listeners the process would not have died, so it goes on.
 */
function reraise(signal: NodeJS.Signals): void {
  stopping = false;
  uninstallSignalHooks();
  if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
  else refresh();
}

const onSigint = () => onSignal('SIGINT');
const onSigterm = () => onSignal('SIGTERM');

function uninstallSignalHooks(): void {
  if (!signalHooksInstalled) return;
  signalHooksInstalled = false;
  process.off('SIGINT', onSigint);
  process.off('SIGTERM', onSigterm);
}

/** Installs exactly the hooks the live runs need, and nothing when no run is alive. */
function refresh(): void {
  const wantExit = participants.size > 0;
  const wantSignals = [...participants.values()].some((flags) => flags.signals);
  if (wantExit && !exitHookInstalled) process.on('exit', onExit);
  if (!wantExit && exitHookInstalled) process.off('exit', onExit);
  exitHookInstalled = wantExit;
  if (stopping) return; // keep the signal hooks until the shutdown in progress is over
  if (wantSignals && !signalHooksInstalled) {
    signalHooksInstalled = true;
    process.on('SIGINT', onSigint);
    process.on('SIGTERM', onSigterm);
  }
  if (!wantSignals) uninstallSignalHooks();
}

/**
 * Adds a live run. With `signals` (the default of `handleParentSignals`) SIGINT/SIGTERM of the parent
 * cancel and reap it; every live run is SIGKILLed when the process exits.
 */
export function registerLiveRun(participant: ShutdownParticipant, signals: boolean): void {
  participants.set(participant, { signals });
  refresh();
}

/** Removes a finished run; the hooks go with the last one. */
export function unregisterLiveRun(participant: ShutdownParticipant): void {
  participants.delete(participant);
  refresh();
}
