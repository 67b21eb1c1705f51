// Test helper: how a well-behaved in-memory child ends its run when a close, finalize or cancel comes.
import type { Usage } from '../../src/index.js';
import type { InMemoryChild } from '../../src/testing/index.js';

/**
 * Accepts the ending control `ref`, then ends the run `status`: with `done`, the result first (`answer`, with
 * `usage` when given); then the child's exit, and the connection goes.
 */
export function endRun(child: InMemoryChild, ref: number, status: 'done' | 'cancelled', answer?: string, usage?: Usage): void {
  child.ack(ref, 'accepted');
  if (status === 'done') child.result(answer, usage === undefined ? {} : { usage });
  child.exit(status);
  child.gone();
}
