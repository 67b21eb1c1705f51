// Starting a run's child (its process with the tree marker every descendant inherits, its output decoded per stream), or adopting a durable one.
import { randomUUID } from 'node:crypto';
import { StringDecoder } from 'node:string_decoder';
import { SupervisedProcess } from '../process/supervised-process.js';
import type { KillStep, SupervisedProcessOptions } from '../process/supervised-process.js';
import type { ProcessPlan } from '../protocol/driver.js';
import type { AttachTarget, ResolvedRunOptions } from '../protocol/resolved-options.js';

/** Environment variable whose unique value marks every process of one run's tree. */
const TREE_MARKER_ENV = 'SUBVISOR_TREE';

/** What the run hears of its child's process. */
export interface ChildListeners {
  /** Decoded output (a character split between two chunks arrives whole). */
  output(text: string, stream: 'stdout' | 'stderr'): void;
  /** A step of the kill ladder. */
  kill(step: KillStep): void;
}

/** A started child and the marker its tree carries (a durable run records it). */
export interface StartedChild {
  process: SupervisedProcess;
  marker: string;
}

/** What every child of a run shares: the ladder's grace, the tail, the listeners. */
function common(options: ResolvedRunOptions, listeners: ChildListeners): Pick<SupervisedProcessOptions, 'killGraceMs' | 'outputTailBytes' | 'onOutput' | 'onKill'> {
  const decoders: { stdout?: StringDecoder; stderr?: StringDecoder } = {};
  return {
    killGraceMs: options.killGraceMs,
    outputTailBytes: options.outputTailBytes,
    onOutput: (chunk, stream) => {
      const text = (decoders[stream] ??= new StringDecoder('utf8')).write(chunk);
      if (text !== '') listeners.output(text, stream);
    },
    onKill: (step) => listeners.kill(step),
  };
}

/**
 * Starts the driver's process plan under the run's options. The caller's environment, then the tree
 * marker, then the protocol's own variables (they win). A spawn error arrives through `exited`.
 * `outputFile`: stdout and stderr go there instead of pipes (a durable run).
 */
export function startChild(plan: ProcessPlan, options: ResolvedRunOptions, listeners: ChildListeners, outputFile?: string): StartedChild {
  const treeId = randomUUID();
  const marker = `${TREE_MARKER_ENV}=${treeId}`;
  const process = new SupervisedProcess({
    command: plan.command,
    args: plan.args,
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    env: { ...options.env, [TREE_MARKER_ENV]: treeId, ...plan.env },
    stdin: plan.stdin,
    stdout: plan.stdout,
    marker,
    ...(outputFile === undefined ? {} : { outputFile }),
    ...common(options, listeners),
  });
  return { process, marker };
}

/** Owns a durable run's child again (attachRun): the same ladder and reaping as a started one. */
export function adoptChild(target: AttachTarget, outputFile: string, options: ResolvedRunOptions, listeners: ChildListeners): SupervisedProcess {
  return new SupervisedProcess({
    command: '',
    args: [],
    env: {},
    marker: target.marker,
    outputFile,
    adopt: { pid: target.pid, start: target.pidStart },
    ...common(options, listeners),
  });
}
