// Journals of real runs (Fen, HEP, a daemon, the CLI) and their replays as fake child processes: same events in order, same acks, same end.
import { execFile } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { connectRun, readJournal, spawnRun } from '../../../src/index.js';
import type { Run, RunEvent } from '../../../src/index.js';
import { fakeChild, fakeFa, fakeFuseraftServe, replayChild, replayRun, waitUntilGone } from '../../../src/testing/index.js';
import type { Scenario } from '../../../src/testing/index.js';
import { startCli } from '../../helpers/cli-run.js';

const execFileAsync = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function scratch(): string {
  const dir = mkdtempSync(join(tmpdir(), 'journal-replay-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A fake (Fen child, fa, replay child) whose processes must all be gone after the test. */
function tracked<T extends { livePids(): number[]; cleanup(): void }>(fake: T): T {
  cleanups.push(async () => {
    expect(await waitUntilGone(() => fake.livePids(), 10_000)).toEqual([]);
    fake.cleanup();
  });
  return fake;
}

async function eventsOf(run: Run): Promise<RunEvent[]> {
  const events: RunEvent[] = [];
  for await (const event of run) events.push(event);
  return events;
}

/** An event as a replay reproduces it: the envelope's run, timestamps and working directories normalized away. */
function comparable(event: RunEvent): Record<string, unknown> {
  const { run: _run, timestamp: _at, cwd: _cwd, physicalCwd: _physical, requestedCwd: _requested, runId: _id, finalTextPath: _path, ...rest } = event as RunEvent & Record<string, unknown>;
  return rest;
}

const onlyJournal = (dir: string): string => {
  const files = readdirSync(dir);
  expect(files).toHaveLength(1);
  return join(dir, files[0]!);
};

/** Resolves when the run's state is `state`. */
const reaches = (run: Run, state: string) => new Promise<void>((resolve) => (run.state === state ? resolve() : run.on('state', (now) => now === state && resolve())));

/** A Fen turn that waits for a steer mid-turn, then answers quoting it. */
const STEERED: Scenario = {
  turns: [{ steps: [{ text: 'Looking. ' }, { pause: 20_000, untilControl: 'steer' }, { tool: 'read', arguments: { path: 'a.ts' }, result: 'ok' }], answer: 'All read.', acknowledgeSteers: true }],
};

describe('a journal of a real Fen run, replayed as a fake child', () => {
  it('the replay yields the recorded events in order with the same shapes, acks the same controls with the live seqs, delivers the steer, and answers the same', async () => {
    const dir = scratch();
    const fake = tracked(fakeChild(STEERED, { turnTickMs: 5, idleTickMs: 20 }));
    const recording = spawnRun({ ...fake, task: 'read the code', journal: join(dir, 'journals') });
    const recordedEvents = eventsOf(recording);
    await reaches(recording, 'running');
    const steer = await recording.steer('only the tests');
    expect(await steer.delivery).toBe('injected');
    const recordedOutcome = await recording.outcome;
    const recorded = await recordedEvents;
    expect(recordedOutcome.status).toBe('done');

    const path = onlyJournal(join(dir, 'journals'));
    expect(statSync(join(dir, 'journals')).mode & 0o777).toBe(0o700);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const journal = readJournal(path);
    expect(journal.outcome?.outcome).toMatchObject({ status: 'done', finalText: recordedOutcome.finalText });
    expect(journal.entries.filter((entry) => entry.kind === 'event').map((entry) => entry.kind === 'event' && entry.event.type)).toEqual(recorded.map((event) => event.type));

    const replay = tracked(replayChild(path));
    expect(replay.task).toBe('read the code');
    const replayed = spawnRun({ ...replay });
    const replayedEvents = eventsOf(replayed);
    await reaches(replayed, 'running');
    const replayedSteer = await replayed.steer('only the tests');
    expect(replayedSteer.status).toBe('accepted');
    expect(await replayedSteer.delivery).toBe('injected');
    const outcome = await replayed.outcome;
    const events = await replayedEvents;
    expect(events.map((event) => event.type)).toEqual(recorded.map((event) => event.type));
    expect(events.map(comparable)).toEqual(recorded.map(comparable));
    expect(outcome).toMatchObject({ status: 'done', finalText: recordedOutcome.finalText, usage: recordedOutcome.usage, turns: recordedOutcome.turns });
  });

  it('replayRun of a journal with a recorded steer, in a program that sends nothing: the replay sends the steer, the outcome settles, the process exits on its own; a caller that drives but never steers gets failed after the bound', async () => {
    const dir = scratch();
    const fake = tracked(fakeChild(STEERED, { turnTickMs: 5, idleTickMs: 20 }));
    const recording = spawnRun({ ...fake, task: 'read the code', journal: join(dir, 'journals') });
    await reaches(recording, 'running');
    await recording.steer('only the tests');
    const recordedOutcome = await recording.outcome;
    const path = onlyJournal(join(dir, 'journals'));

    // A program of its own, as a user writes it: the built package, no steer sent, nothing keeping it alive but the replay.
    const program = (options: string) => `
      import { replayRun } from ${JSON.stringify(join(ROOT, 'dist', 'testing', 'index.js'))};
      const { run } = replayRun(${JSON.stringify(path)}, ${options});
      const outcome = await run.outcome;
      console.log(JSON.stringify({ status: outcome.status, finalText: outcome.finalText, error: outcome.error, state: run.state }));
    `;
    const ownSteer = await execFileAsync(process.execPath, ['--input-type=module', '--eval', program('{}')], { timeout: 60_000 });
    expect(JSON.parse(ownSteer.stdout)).toEqual({ status: 'done', finalText: recordedOutcome.finalText, state: 'done' });

    const neverSteered = await execFileAsync(process.execPath, ['--input-type=module', '--eval', program("{ controls: 'caller', controlWaitMs: 300 }")], { timeout: 60_000 });
    expect(JSON.parse(neverSteered.stdout)).toEqual({
      status: 'failed',
      error: "replay: waited 300 ms for the recording's control 2 (steer, sent by the caller), which never came",
      state: 'failed',
    });
  });

  it('a child the recording had to kill (it ignored the cancel and SIGTERM) is killed again: the same end, SIGKILL included', async () => {
    const dir = scratch();
    const fake = tracked(fakeChild('stubborn', { turnTickMs: 5, idleTickMs: 20 }));
    const recording = spawnRun({ ...fake, task: 'work', journal: dir, killGraceMs: 200 });
    await reaches(recording, 'running');
    await recording.cancel();
    const recorded = await recording.outcome;
    expect(recorded).toMatchObject({ status: 'cancelled', killed: true, escalated: true });

    const replay = tracked(replayChild(onlyJournal(dir)));
    const replayed = spawnRun({ ...replay, killGraceMs: 200 });
    await reaches(replayed, 'running');
    expect((await replayed.cancel()).status).toBe('accepted');
    expect(await replayed.outcome).toMatchObject({ status: 'cancelled', killed: true, escalated: true });
  });

  it('timing kept: the recorded gaps come back (no shorter); compressed: the same events', async () => {
    const dir = scratch();
    const fake = tracked(fakeChild({ turns: [{ steps: [{ text: 'before' }, { pause: 400 }, { text: 'after' }], answer: 'done' }] }, { turnTickMs: 5 }));
    await spawnRun({ ...fake, task: 'wait', journal: dir }).outcome;
    const path = onlyJournal(dir);
    const replayed = async (timing: 'kept' | 'compressed') => {
      const replay = tracked(replayChild(path, { timing }));
      const seen: Array<[string, number]> = [];
      const run = spawnRun({ ...replay });
      run.on('event', (event) => seen.push([event.type === 'assistant-text' ? `text ${(event as { text?: string }).text}` : event.type, Date.now()]));
      expect((await run.outcome).status).toBe('done');
      const at = (type: string) => seen.find(([seenType]) => seenType === type)![1];
      return { gap: at('text after') - at('text before'), types: seen.map(([type]) => type) };
    };
    const kept = await replayed('kept');
    // The child keeps the recorded 400 ms; the parent hears it later by up to a read of its tail, so 'before' may
    // come late and the gap heard shrink (287 ms was seen at load 12.6): 250 ms still tells kept from compressed.
    expect(kept.gap).toBeGreaterThanOrEqual(250);
    const compressed = await replayed('compressed');
    expect(compressed.types).toEqual(kept.types);
    expect(compressed.gap).toBeLessThan(kept.gap);
  });
});

describe('journals of other protocols', () => {
  it('HEP: replayed over Fen, the same event types in order; in memory, the same events with their own shapes', async () => {
    const dir = scratch();
    const fa = tracked(fakeFa('tools'));
    const recording = spawnRun({ ...fa, protocol: 'hep', task: 'explain', journal: dir });
    const recorded = await eventsOf(recording);
    const recordedOutcome = await recording.outcome;
    expect(recordedOutcome.status).toBe('done');
    const path = onlyJournal(dir);
    expect(readJournal(path).start).toMatchObject({ protocol: 'hep', command: fa.command });

    const replay = tracked(replayChild(path));
    const overFen = spawnRun({ ...replay });
    const fenEvents = await eventsOf(overFen);
    expect(fenEvents.map((event) => event.type)).toEqual(recorded.map((event) => event.type));
    expect((await overFen.outcome)).toMatchObject({ status: 'done', finalText: recordedOutcome.finalText });

    const { run } = replayRun(path);
    const inMemory = await eventsOf(run);
    const childEvents = (events: RunEvent[]) => events.filter((event) => event.type !== 'exit').map(comparable).map(({ seq: _seq, ...rest }: Record<string, unknown>) => rest);
    expect(childEvents(inMemory)).toEqual(childEvents(recorded));
    expect((await run.outcome)).toMatchObject({ status: 'done', finalText: recordedOutcome.finalText, sessionId: recordedOutcome.sessionId });
    expect(recordedOutcome.sessionId).toEqual(expect.any(String));
  });

  it("a daemon's run: the journal never holds its token, nor the address's credentials", async () => {
    const dir = scratch();
    const token = 'tok-' + 'z'.repeat(24);
    const daemon = await fakeFuseraftServe('echo', { token });
    cleanups.push(() => daemon.close());
    const run = connectRun({ protocol: 'fuseraft-serve', url: daemon.url!, token, task: `say ${token}`, journal: dir, killGraceMs: 500 });
    expect((await run.outcome).status).toBe('done');
    const text = readFileSync(onlyJournal(dir), 'utf8');
    expect(text).not.toContain(token);
    expect(readJournal(onlyJournal(dir)).start.command).not.toContain('tok-');
  });
});

describe('supervise --journal DIR', () => {
  it('writes the run\'s journal, private, ending with the outcome; a directory others can read is refused before anything starts', async () => {
    const dir = scratch();
    const fake = tracked(fakeChild('demo', { turnTickMs: 5, idleTickMs: 20 }));
    const ok = await startCli(['--journal', join(dir, 'j'), '--run-id', 'cli-journal', '-q', '--task', 'hello', '--', fake.command, ...fake.args], { env: fake.env }).result;
    expect(ok.code).toBe(0);
    const journal = readJournal(join(dir, 'j', 'cli-journal.jsonl'));
    expect(journal.outcome?.outcome.status).toBe('done');
    expect(journal.outcome?.outcome.finalText).toBe(ok.stdout.toString());
    expect(statSync(join(dir, 'j', 'cli-journal.jsonl')).mode & 0o777).toBe(0o600);

    const open = join(dir, 'open');
    mkdirSync(open);
    chmodSync(open, 0o755);
    const refused = await startCli(['--journal', open, '--task', 'hello', '--', fake.command, ...fake.args], { env: fake.env }).result;
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('open to other users');
    expect(readdirSync(open)).toEqual([]);
  });
});
