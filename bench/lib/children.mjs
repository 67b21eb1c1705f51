// Fake-child scenarios used by the benchmarks, and a bare (unsupervised) execa spawn of the same child
// for the baselines: private files, FEN_WIRE_* environment, control lines stamped by subvisor/wire.
import { appendFileSync, closeSync, constants, mkdtempSync, openSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { fakeChild } from 'subvisor/testing';
import { createSender } from 'subvisor/wire';
import { sleep } from './harness.mjs';

/** An echo child that says `ready` and waits there for controls. */
export const IDLE_SCENARIO = { name: 'bench-idle' };

/**
 * A child that costs next to nothing itself (a shell that appends `ready` and becomes `sleep`): for the
 * 1000-idle case, where 1000 Node children would not fit the machine. It reads no controls; a run ends
 * it with the kill ladder's SIGTERM, a bare spawn with SIGKILL.
 */
export const SLEEPING_CHILD = {
  command: 'sh',
  args: ['-c', 'printf \'{"v":1,"seq":1,"type":"ready","run":"%s"}\\n\' "$FEN_WIRE_RUN_ID" >> "$FEN_WIRE_EVENT_PATH" && exec sleep 600'],
  env: {},
};

/** The task given to flood children: the flood runs inside the turn this prompt starts. */
export const FLOOD_TASK = 'flood';

/**
 * A child whose first turn starts by writing `count` stamped `assistant-text-delta` events of ~`bytes`
 * bytes (at `rate` per second, or as fast as it can). Inside a turn, as in a real run: the prompt has
 * been acked, so no control waits for an ack while the events stream.
 */
export function floodScenario({ count, bytes, rate }) {
  const flood = { count, bytes, stamp: true };
  if (rate !== undefined) flood.rate = rate;
  return { name: 'bench-flood', misbehaviours: [{ at: 'turn-start', do: { flood } }] };
}

/** A child that acks `cancel` but keeps running, and ignores SIGTERM: only SIGKILL ends it. */
export const STUBBORN_SCENARIO = { name: 'bench-stubborn', ignore: ['cancel', 'sigterm'] };

/**
 * spawnRun options (command, args, env) that start the fake child with `scenario`. Transcripts are off:
 * they are test instrumentation, not part of what a parent pays for, and they would leave files behind.
 */
export function childOptions(scenario) {
  const child = fakeChild(scenario, { transcript: false });
  child.cleanup(); // an inline scenario and no transcript leave the kit nothing to keep on disk
  return { command: child.command, args: child.args, env: child.env };
}

const CREATE_NEW = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL;

/**
 * Starts the fake child with `scenario` the way a minimal parent would: execa, a private directory with
 * the two channel files, the `task` (if any) as the first prompt, no supervision. `stop()` cancels it,
 * SIGKILLs it if it is still there after `graceMs`, waits for its exit and removes the files.
 * `forceKillAfterDelay` is execa's own SIGTERM -> SIGKILL delay for `child.kill()`; `launch` (command,
 * args, env) starts another child than the fake one (`scenario` is then unused).
 */
export function spawnBare(scenario, { runId = 'bench', task, forceKillAfterDelay = 5000, launch } = {}) {
  const dir = mkdtempSync(join(os.tmpdir(), 'bench-bare-'));
  const controlPath = join(dir, 'control.jsonl');
  const eventPath = join(dir, 'events.jsonl');
  closeSync(openSync(controlPath, CREATE_NEW, 0o600));
  closeSync(openSync(eventPath, CREATE_NEW, 0o600));
  const sender = createSender('control', runId);
  const send = (type, payload) => {
    const encoded = sender.next(type, payload);
    if (!encoded.ok) throw new Error(`cannot encode ${type}: ${encoded.rejection.reason}`);
    appendFileSync(controlPath, `${encoded.line}\n`);
  };
  // Like Fen's parent (and spawnRun), the task is the first prompt, appended before the spawn.
  if (task !== undefined) send('prompt', { text: task });
  const { command, args = [], env = {} } = launch ?? childOptions(scenario);
  const child = execa(command, args, {
    env: {
      ...env,
      FEN_WIRE_CONTROL_PATH: controlPath,
      FEN_WIRE_EVENT_PATH: eventPath,
      FEN_WIRE_RUN_ID: runId,
    },
    stdio: 'ignore',
    buffer: false,
    reject: false,
    forceKillAfterDelay,
  });
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  let gone = false;
  exited.then(() => {
    gone = true;
  });
  return {
    child,
    pid: child.pid,
    eventPath,
    exited,
    async stop(graceMs = 3000) {
      if (!gone) {
        send('cancel');
        await Promise.race([exited, sleep(graceMs)]);
        if (!gone) child.kill('SIGKILL');
      }
      await exited;
      await child; // settles the execa promise (reject: false, so it never throws)
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
