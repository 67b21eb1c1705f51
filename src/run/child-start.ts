// A run's child: started (its process with the tree marker every descendant inherits, its output decoded per stream; a durable one's record and lease) or adopted again by attachRun.
import { randomUUID } from 'node:crypto';
import { StringDecoder } from 'node:string_decoder';
import { SupervisedProcess } from '../process/supervised-process.js';
import type { KillStep, SupervisedProcessOptions } from '../process/supervised-process.js';
import type { WatchEntry } from '../process/watchdog.js';
import type { Launch, ProcessPlan } from '../protocol/driver.js';
import type { AttachTarget, ResolvedRunOptions } from '../protocol/resolved-options.js';
import { DurableTenure } from './durable-tenure.js';
import { rlimitsOf } from './tree-limiter.js';
import { packageRoot } from '../text/package-version.js';

/** Environment variable whose unique value marks every process of one run's tree. */
const TREE_MARKER_ENV = 'SUBVISOR_TREE';

/** What the run hears of its child's process. */
export interface ChildListeners {
  /** Decoded output (a character split between two chunks arrives whole). */
  output(text: string, stream: 'stdout' | 'stderr'): void;
  /** A step of the kill ladder. */
  kill(step: KillStep): void;
}

/** The child a run owns, and what the watchdog and a durable run's lease need of it. */
export interface OwnedChild {
  process: SupervisedProcess;
  /** The watchdog's entry (naming the lease of a durable run); undefined when the spawn failed. */
  watch: WatchEntry | undefined;
  /** A durable run: this parent's hold on it. */
  tenure?: DurableTenure;
  /** The run was to be durable but its record or lease could not be written: nobody could re-attach. */
  durableError?: string;
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
 * marker, then the protocol's own variables (they win). A spawn error arrives through `exited`. A
 * durable run's output goes to a file in its directory instead of pipes, and its lease is taken and
 * its record written once the child has a pid. The child gets the rlimits among `limits`, and runs in
 * `sandbox` with its cwd and the run's channel directory (`run.channelDir`, Fen's files) writable.
 */
export function startChild(
  plan: ProcessPlan,
  launch: Launch,
  run: { runId: string; startedAt: number; channelDir: string },
  options: ResolvedRunOptions,
  listeners: ChildListeners,
): OwnedChild {
  const treeId = randomUUID();
  const marker = `${TREE_MARKER_ENV}=${treeId}`;
  const durableDir = launch.durableDir;
  const rlimits = rlimitsOf(options.limits);
  const sandbox = options.sandbox;
  const process = new SupervisedProcess({
    command: plan.command,
    args: plan.args,
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    env: { ...options.env, [TREE_MARKER_ENV]: treeId, ...plan.env },
    stdin: plan.stdin,
    stdout: plan.stdout,
    marker,
    ...(rlimits === undefined ? {} : { rlimits }),
    ...(sandbox === undefined
      ? {}
      : {
          sandbox: {
            writable: [options.cwd ?? globalThis.process.cwd(), ...(run.channelDir === '' ? [] : [run.channelDir]), ...sandbox.writable],
            network: sandbox.network,
            readable: [packageRoot()].filter((path): path is string => path !== undefined),
            scratchParent: options.stateDir,
          },
        }),
    ...(durableDir === undefined ? {} : { outputFile: DurableTenure.outputOf(durableDir) }),
    ...common(options, listeners),
  });
  const watch = process.pid === undefined ? undefined : process.watchEntry(launch.ownFiles);
  if (durableDir === undefined || watch === undefined || options.durable === undefined) return { process, watch };
  const record = { runId: run.runId, startedAt: run.startedAt, pid: process.pid!, pidStart: watch.rootStart, marker, command: plan.command, lastControlSeq: launch.taskRef ?? 0 };
  try {
    const tenure = DurableTenure.begin(durableDir, record, options, options.durable.leaseMs);
    return { process, watch: tenure.watchEntry(watch), tenure };
  } catch (error) {
    return { process, watch, durableError: `could not make the run durable: ${(error as Error).message}` };
  }
}

/** Owns a durable run's child again (attachRun took its lease): the same ladder and reaping as a started one, the lease renewed. */
export function adoptChild(target: AttachTarget, launch: Launch, options: ResolvedRunOptions, listeners: ChildListeners): OwnedChild {
  const process = new SupervisedProcess({
    command: '',
    args: [],
    env: {},
    marker: target.marker,
    outputFile: DurableTenure.outputOf(target.dir),
    adopt: { pid: target.pid, start: target.pidStart },
    ...common(options, listeners),
  });
  const tenure = DurableTenure.resume(target.dir, options.durable?.leaseMs ?? 0);
  const watch = process.watchEntry(launch.ownFiles);
  return { process, watch: watch === undefined ? undefined : tenure.watchEntry(watch), tenure };
}
