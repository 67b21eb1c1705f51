// The worker's run host thread: a createSupervisor pool that runs the jobs' children and reports their events, acks and outcomes.
import { parentPort, workerData } from 'node:worker_threads';
import { createSupervisor } from '../pool/supervisor.js';
import { ControlRefusedError } from '../run/errors.js';
import type { Ack } from '../api/types.js';
import type { PoolRun } from '../pool/types.js';
import { childlessOutcome } from '../run/outcome.js';
import type { AckRecordBody } from './records.js';
import type { HostMessage, HostRequest } from './run-host.js';

const port = parentPort;
if (port === null) throw new Error('run-host-thread runs only as a worker thread of subvisor/queue');

const { concurrency } = workerData as { concurrency: number };
// Signals belong to the worker's main thread (it decides between finishing and handing back).
const pool = createSupervisor({ concurrency, handleParentSignals: false });
const runs = new Map<string, PoolRun>();
let shuttingDown = false;

function post(message: HostMessage): void {
  port!.postMessage(message);
}

function body(ack: Ack): AckRecordBody {
  const out: AckRecordBody = { status: ack.status, seq: ack.seq };
  if (ack.reason !== undefined) out.reason = ack.reason;
  if (ack.delivery !== undefined) out.delivers = true;
  return out;
}

function followDelivery(id: string, ack: Ack): void {
  void ack.delivery?.then((delivery) => post({ t: 'delivery', id, seq: ack.seq, delivery }));
}

function start(id: string, options: Parameters<typeof pool.spawn>[0]): void {
  let run: PoolRun;
  try {
    run = pool.spawn(options);
  } catch (error) {
    // Invalid options from a profile: the run ends failed like one that could not start.
    post({ t: 'outcome', id, outcome: childlessOutcome(id, 'failed', 'spawn-failed', (error as Error).message) });
    return;
  }
  runs.set(id, run);
  run.on('state', (state) => post({ t: 'state', id, state }));
  run.on('kill', (step) => post({ t: 'kill', id, signal: step.signal, pids: step.pids }));
  run.on('control', (sent) => post({ t: 'sent', id, control: sent.type, origin: sent.origin, seq: sent.seq }));
  run.on('ack', (ack, control, origin) => {
    // A caller's ack travels as its control's result (below), with the producer's request id.
    if (origin === 'caller') return;
    post({ t: 'ack', id, control, origin, ack: body(ack) });
    followDelivery(id, ack);
  });
  void (async () => {
    for await (const events of run.batches()) post({ t: 'events', id, events, at: Date.now() });
    const outcome = await run.outcome;
    runs.delete(id);
    post({ t: 'outcome', id, outcome });
  })();
}

async function control(request: Extract<HostRequest, { t: 'control' }>): Promise<AckRecordBody> {
  const run = runs.get(request.id);
  if (run === undefined) return { status: 'unanswered', reason: 'the run already ended on this worker', seq: 0 };
  const text = request.text ?? '';
  try {
    let ack: Ack;
    switch (request.control) {
      case 'prompt':
        ack = await run.prompt(text);
        break;
      case 'steer':
        ack = await run.steer(text);
        break;
      case 'follow-up':
        ack = await run.followUp(text);
        break;
      case 'finalize':
        ack = await (request.text === undefined ? run.finalize() : run.finalize(request.text));
        break;
      case 'cancel':
        ack = await run.cancel();
        break;
      case 'close':
        ack = await run.close();
        break;
      case 'kill':
        void run.kill('killed by the producer');
        return { status: 'accepted', seq: 0 };
    }
    followDelivery(request.id, ack);
    return body(ack);
  } catch (error) {
    if (error instanceof ControlRefusedError) return { status: 'rejected', reason: error.message, seq: 0 };
    return { status: 'unanswered', reason: (error as Error).message, seq: 0 };
  }
}

port.on('message', (request: HostRequest) => {
  switch (request.t) {
    case 'start':
      if (shuttingDown) post({ t: 'outcome', id: request.id, outcome: childlessOutcome(request.id, 'failed', 'spawn-failed', 'the worker is shutting down') });
      else start(request.id, request.options);
      break;
    case 'control':
      void control(request).then((ack) => post({ t: 'control-result', req: request.req, ack }));
      break;
    case 'stop':
      void runs.get(request.id)?.terminate(request.reason);
      break;
    case 'shutdown':
      shuttingDown = true;
      void pool.shutdown({ mode: 'kill' }).then(() => {
        post({ t: 'closed' });
        port.close();
      });
      break;
  }
});
