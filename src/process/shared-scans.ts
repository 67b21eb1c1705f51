// Coalesces the /proc passes of trees signalled, walked or left by their root in the same turn of the event loop: one table and one environ pass serve them all.
import { hasProcFs, scanMarkers, scanProcesses } from './proc-table.js';
import type { ProcessTable } from './proc-table.js';
import type { ProcessTree } from './process-tree.js';

/**
 * A tree waiting for the next shared pass: to be signalled, walked (its root is about to exit), or
 * swept once its root exited. Every request is served by a table read after it was made, so it learns
 * all a pass of its own would have.
 */
type Request =
  | { kind: 'signal'; tree: ProcessTree; signal: NodeJS.Signals; resolve: (pids: number[]) => void; reject: (error: unknown) => void }
  | { kind: 'refresh' | 'sweep'; tree: ProcessTree; resolve: (table: ProcessTable) => void; reject: (error: unknown) => void };

let pending: Request[] = [];

/**
 * Signals `tree` as {@link ProcessTree.signal} does, together with every tree signalled or swept in this
 * turn of the event loop: each tree's group signal leaves first, then one process table and one
 * environ pass (every tree's marker at once) find what the group signals did not reach. Ending N runs
 * at once so costs about one pass of each instead of N (each a read of every process's stat or
 * environ file: 25-35 ms each with 2000 processes). Resolves with the pids signalled.
 */
export function signalTogether(tree: ProcessTree, signal: NodeJS.Signals): Promise<number[]> {
  return new Promise((resolve, reject) => enqueue({ kind: 'signal', tree, signal, resolve, reject }));
}

/**
 * Sweeps `tree` as {@link ProcessTree.sweep} does (its root exited: orphans are found by the marker),
 * sharing the pass with every tree signalled or swept in this turn. Resolves with the table it used,
 * read after the request: good for a check of what is still alive right after.
 */
export function sweepTogether(tree: ProcessTree): Promise<ProcessTable> {
  return new Promise((resolve, reject) => enqueue({ kind: 'sweep', tree, resolve, reject }));
}

/**
 * Walks `tree` as {@link ProcessTree.refresh} does (its root said it is exiting: descendants are
 * recorded by their ppid links while it lives), sharing the table with every tree of this turn.
 */
export function refreshTogether(tree: ProcessTree): Promise<ProcessTable> {
  return new Promise((resolve, reject) => enqueue({ kind: 'refresh', tree, resolve, reject }));
}

function enqueue(request: Request): void {
  pending.push(request);
  // setImmediate, not a microtask: the exits of one batch of reaped children and the timers that
  // expire together arrive as separate callbacks, each followed by a microtask checkpoint; the check
  // phase comes after all of them.
  if (pending.length === 1) setImmediate(serve);
}

function serve(): void {
  const batch = pending;
  pending = [];
  if (!hasProcFs()) {
    // No table to share: each tree signals the way it can (the group, tree-kill's walk).
    for (const request of batch) {
      guarded(request, () => {
        if (request.kind === 'signal') request.resolve(request.tree.signal(request.signal));
        else request.resolve(new Map());
      });
    }
    return;
  }
  const groupSent = new Map<Request, boolean>();
  for (const request of batch) {
    if (request.kind === 'signal') guarded(request, () => groupSent.set(request, request.tree.beginSignal(request.signal)));
  }
  const table = scanProcesses();
  const markers = new Set<string>();
  // A walk needs no environ pass: only signals and sweeps look for the markers.
  for (const { kind, tree } of batch) if (kind !== 'refresh' && tree.marker !== undefined) markers.add(tree.marker);
  const marked = scanMarkers(markers);
  for (const request of batch) {
    if (request.kind === 'signal') {
      const sent = groupSent.get(request);
      if (sent !== undefined) guarded(request, () => request.resolve(request.tree.finishSignal(request.signal, sent, table, marked)));
    } else {
      guarded(request, () => {
        if (request.kind === 'sweep') request.tree.sweep(table, marked);
        else request.tree.refresh(table);
        request.resolve(table);
      });
    }
  }
}

/** Runs one request's step; what it throws rejects that request alone (a settled one ignores it). */
function guarded(request: Request, step: () => void): void {
  try {
    step();
  } catch (error) {
    request.reject(error);
  }
}
