// Every public function that takes an options object refuses a key it does not know, naming the one meant, as
// spawnRun does, before it starts, connects or listens to anything.
import { describe, expect, it } from 'vitest';
import { createSupervisor, spawnRun } from '../../../src/index.js';
import { asAgent } from '../../../src/agent/index.js';
import { serveAgent } from '../../../src/child/index.js';
import { createQueueSupervisor, startWorker } from '../../../src/queue/index.js';
import {
  createInMemoryRun,
  fakeChild,
  fakeFa,
  fakeFuseraft,
  fakeFuseraftServe,
  fakeMewDaemon,
  fakeModel,
  replayChild,
  replayRun,
  testKit,
} from '../../../src/testing/index.js';
import type { Agent } from '../../../src/agent/index.js';

const refused = (owner: string, key: string, meant: string): RegExp =>
  new RegExp(`^${key.replace(/\./g, '\\.')} is not an option of ${owner.replace(/\./g, '\\.')}.*; did you mean ${meant}\\?$`);

/** A Redis address nothing listens on: the checks come before any connection. */
const address = { connection: 'redis://127.0.0.1:1', queue: 'unknown-keys' };
const agent: Agent = { invoke: () => (async function* () {})() };

describe('unknown option keys are refused with the name meant', () => {
  it('spawnRun (the model the others follow)', () => {
    expect(() => spawnRun({ command: 'x', task: 't', timeoutMS: 5 } as never)).toThrow(refused('spawnRun', 'options.timeoutMS', 'timeoutMs'));
  });

  it('createSupervisor, its defaults and sup.spawn', async () => {
    expect(() => createSupervisor({ concurrency: 2, bogus: 1 } as never)).toThrow(/^options\.bogus is not an option of createSupervisor; did you mean \w+\?$/);
    expect(() => createSupervisor({ concurrency: 2, warmm: 1 } as never)).toThrow(refused('createSupervisor', 'options.warmm', 'warm'));
    expect(() => createSupervisor({ concurrency: 2, defaults: { timeoutMS: 5 } } as never)).toThrow(refused('spawnRun', 'options.defaults.timeoutMS', 'timeoutMs'));
    // A pool with a start of its own still refuses a misspelt spawn option (spawnRun's check never runs there).
    const sup = createSupervisor({ concurrency: 1, handleParentSignals: false, start: () => { throw new Error('never started'); } });
    expect(() => sup.spawn({ taks: 'x' } as never)).toThrow(refused('sup.spawn', 'options.taks', 'task'));
    expect(() => sup.spawn({ priorty: 1 } as never)).toThrow(refused('sup.spawn', 'options.priorty', 'priority'));
    await expect(sup.serveDashboard({ prot: 0 } as never)).rejects.toThrow(refused('serveDashboard', 'options.prot', 'port'));
    expect(() => sup.events({ untilIdel: true } as never)).toThrow(refused('sup.events()', 'options.untilIdel', 'untilIdle'));
    // A misspelt mode would otherwise shut down in the default mode, not the one asked for.
    expect(() => sup.shutdown({ mod: 'kill' } as never)).toThrow(refused('sup.shutdown()', 'options.mod', 'mode'));
    expect(() => sup.shutdown('kill' as never)).toThrow("shutdown takes an options object ({ mode, graceMs }), as in shutdown({ mode: 'kill' })");
    await sup.shutdown();
  });

  it("the queue's producer and worker", () => {
    expect(() => createQueueSupervisor({ ...address, retension: {} } as never)).toThrow(refused('createQueueSupervisor', 'options.retension', 'retention'));
    expect(() => startWorker({ ...address, profiles: {}, concurrancy: 2 } as never)).toThrow(refused('startWorker', 'options.concurrancy', 'concurrency'));
  });

  it('serveAgent and asAgent', async () => {
    await expect(serveAgent(agent, { exitProces: false } as never)).rejects.toThrow(refused('serveAgent', 'options.exitProces', 'exitProcess'));
    expect(() => asAgent({ command: 'x', sesions: 'fresh' } as never)).toThrow(refused('asAgent', 'options.sesions', 'sessions'));
    // spawnRun's own keys are asAgent's too, misspelt the same way.
    expect(() => asAgent({ command: 'x', timeoutMS: 5 } as never)).toThrow(refused('asAgent', 'options.timeoutMS', 'timeoutMs'));
  });

  it("the testing kit's fakes, replays, in-memory runs and fakeModel", async () => {
    expect(() => fakeChild('echo', { turnTick: 5 } as never)).toThrow(refused('fakeChild', 'options.turnTick', 'turnTickMs'));
    expect(() => testKit({ afterEch: () => {} } as never)).toThrow(refused('testKit', 'hooks.afterEch', 'afterEach'));
    expect(() => testKit({}, { killGrace: 5 } as never)).toThrow(refused('testKit', 'options.killGrace', 'killGraceMs'));
    expect(() => createInMemoryRun({ taks: 'x' } as never)).toThrow(refused('createInMemoryRun', 'options.taks', 'task'));
    expect(() => replayChild('never-read.jsonl', { timming: 'compressed' } as never)).toThrow(refused('replayChild', 'options.timming', 'timing'));
    expect(() => replayRun('never-read.jsonl', { timming: 'compressed' } as never)).toThrow(refused('replayRun', 'options.timming', 'timing'));
    expect(() => fakeFa('echo' as never, { outptu: 'events' } as never)).toThrow(refused('fakeFa', 'options.outptu', 'output'));
    expect(() => fakeFuseraft('repl', 'chat', { confg: 'x' } as never)).toThrow(refused('fakeFuseraft', 'options.confg', 'config'));
    await expect(fakeFuseraftServe('echo', { tokn: 'x' } as never)).rejects.toThrow(refused('fakeFuseraftServe', 'options.tokn', 'token'));
    await expect(fakeMewDaemon('chat', { prot: 0 } as never)).rejects.toThrow(refused('fakeMewDaemon', 'options.prot', 'port'));
    await expect(fakeModel({ turns: [], delay: 5 } as never)).rejects.toThrow(/delay is not .*; did you mean delayMs\?$/);
  });
});
