// SIGINT/SIGTERM/SIGHUP handling while a run is alive: the first one cancels (with the backstop), the second kills now.

// SIGHUP too: a closed terminal must not leave the child (in its own process group) running.
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

export interface SignalActions {
  /** First signal: cancel the run and let the kill-after-grace backstop reap it. */
  cancel(signal: NodeJS.Signals): void;
  /** Second signal: kill the child's process tree at once. */
  killNow(signal: NodeJS.Signals): void;
}

/** Installs the handlers; the returned function removes them (call it once the run is over). */
export function handleSignals(actions: SignalActions): () => void {
  let received = 0;
  const onSignal = (signal: NodeJS.Signals): void => {
    received += 1;
    if (received === 1) actions.cancel(signal);
    else actions.killNow(signal);
  };
  for (const signal of SIGNALS) process.on(signal, onSignal);
  return () => {
    for (const signal of SIGNALS) process.off(signal, onSignal);
  };
}
