// Ending a run on the agent's behalf: cancel then kill for a consumer that stopped, close then terminate for an idle session.
import type { Run } from '../api/types.js';

/** Resolves when `promise` settles or after `ms`, whichever comes first; leaves no timer behind. */
export async function within(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([promise, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The consumer stopped reading: send `cancel`, give the child `graceMs` to leave on its own, then SIGKILL
 * the whole tree (grandchildren in their own session included). Resolves once the tree is gone.
 */
export async function cancelThenKill(run: Run, graceMs: number, reason: string): Promise<void> {
  if (run.ended) return;
  run.cancel().catch(() => undefined); // refused only when the run is already ending: the outcome still comes
  await within(run.outcome, graceMs);
  if (!run.ended) await run.kill(reason);
  await run.outcome;
}

/** An idle keep-alive session ends: `close` (the child exits done), and terminate it if it is still there after `graceMs`. */
export async function closeRun(run: Run, graceMs: number, reason: string): Promise<void> {
  if (run.ended) return;
  run.close().catch(() => undefined);
  await within(run.outcome, graceMs);
  if (!run.ended) await run.terminate(reason);
}
