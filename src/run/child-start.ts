// Starting a run's child: its process with the tree marker every descendant inherits, and its output decoded per stream.
import { randomUUID } from 'node:crypto';
import { StringDecoder } from 'node:string_decoder';
import { SupervisedProcess } from '../process/supervised-process.js';
import type { KillStep } from '../process/supervised-process.js';
import type { ProcessPlan } from '../protocol/driver.js';
import type { ResolvedRunOptions } from '../protocol/resolved-options.js';

/** Environment variable whose unique value marks every process of one run's tree. */
const TREE_MARKER_ENV = 'SUBVISOR_TREE';

/** What the run hears of its child's process. */
export interface ChildListeners {
  /** Decoded output (a character split between two chunks arrives whole). */
  output(text: string, stream: 'stdout' | 'stderr'): void;
  /** A step of the kill ladder. */
  kill(step: KillStep): void;
}

/**
 * Starts the driver's process plan under the run's options. The caller's environment, then the tree
 * marker, then the protocol's own variables (they win). A spawn error arrives through `exited`.
 */
export function startChild(plan: ProcessPlan, options: ResolvedRunOptions, listeners: ChildListeners): SupervisedProcess {
  const treeId = randomUUID();
  const decoders: { stdout?: StringDecoder; stderr?: StringDecoder } = {};
  return new SupervisedProcess({
    command: plan.command,
    args: plan.args,
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    env: { ...options.env, [TREE_MARKER_ENV]: treeId, ...plan.env },
    stdin: plan.stdin,
    stdout: plan.stdout,
    killGraceMs: options.killGraceMs,
    marker: `${TREE_MARKER_ENV}=${treeId}`,
    outputTailBytes: options.outputTailBytes,
    onOutput: (chunk, stream) => {
      const text = (decoders[stream] ??= new StringDecoder('utf8')).write(chunk);
      if (text !== '') listeners.output(text, stream);
    },
    onKill: (step) => listeners.kill(step),
  });
}
