// Replaying a journal: the script it makes (normalized, acks tied to controls, the end) and the in-memory replay with every shape kept.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readJournal } from '../../../src/index.js';
import type { Journal, JournalEntry, RunEvent } from '../../../src/index.js';
import { JournalFile } from '../../../src/journal/journal-file.js';
import { recordRun } from '../../../src/journal/run-journal.js';
import { createInMemoryRun, REPLAY_PLACEHOLDERS, replayRun, replayScriptOf } from '../../../src/testing/index.js';
import type { InMemoryRun } from '../../../src/testing/index.js';
import { delayOf } from '../../../src/testing/replay/replay-script.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A journal line without its time (the helper numbers them), kind by kind. */
type Unstamped = JournalEntry extends infer E ? (E extends JournalEntry ? Omit<E, 'at'> & { at?: number } : never) : never;

function journalOf(entries: Unstamped[], outcome?: object): Journal {
  const start = { kind: 'start', at: 0, journal: 1, runId: 'r1', protocol: 'hep', startedAt: 'x', command: 'fa' } as const;
  const all = [start, ...entries.map((entry, index) => ({ at: index + 1, ...entry }))] as JournalEntry[];
  if (outcome !== undefined) all.push({ kind: 'outcome', at: 999, leftOut: 0, outcome } as JournalEntry);
  const last = all.at(-1)!;
  return { start, entries: all, ...(last.kind === 'outcome' ? { outcome: last } : {}), truncated: all.some((entry) => entry.kind === 'truncated') };
}

const envelope = (seq: number) => ({ v: 1 as const, seq, run: 'r1' });

describe('replayScriptOf', () => {
  it('keeps the events in order and their shapes; normalizes the envelope, timestamps, working directories, the run id, the answer file; refs become control indexes', () => {
    const journal = journalOf(
      [
        { kind: 'control', seq: 7, control: 'prompt', origin: 'task', text: 'the task' },
        { kind: 'event', event: { type: 'ready', protocol: 'hep', extra: { fah: '1.0' }, ...envelope(1) } },
        { kind: 'event', at: 40, event: { type: 'control-ack', status: 'accepted', ref: 7, ...envelope(2) } },
        { kind: 'event', at: 50, event: { type: 'user', text: 'hi', timestamp: '2026-01-01T00:00:00Z', cwd: '/home/me', physicalCwd: '/real', runId: 'r1', ...envelope(3) } },
        { kind: 'control', at: 60, seq: 8, control: 'steer', origin: 'caller', text: 'go' },
        { kind: 'event', at: 70, event: { type: 'info', refs: [8, 99], ...envelope(4) } },
        { kind: 'event', at: 80, event: { type: 'result', stopReason: 'stop', finalText: 'cut', truncated: true, finalTextPath: '/tmp/x', ...envelope(5) } },
        { kind: 'event', at: 90, event: { type: 'exit', status: 'timed-out', childStatus: 'cancelled', ...envelope(6) } },
      ],
      { status: 'timed-out', finalText: 'the whole answer', killed: false, escalated: false, exitCode: 0 },
    );
    const script = replayScriptOf(journal);
    expect(script.protocol).toBe('hep');
    expect(script.task).toBe('the task');
    expect(script.controls).toEqual([
      { type: 'prompt', origin: 'task', at: 1, text: 'the task' },
      { type: 'steer', origin: 'caller', at: 60, text: 'go' },
    ]);
    expect(script.finalText).toBe('the whole answer');
    expect(script.end).toEqual({ exitLine: true, killed: false, escalated: false, exitCode: 0 });
    expect(script.steps.map((step) => step.event)).toEqual([
      { type: 'ready', protocol: 'hep', extra: { fah: '1.0' } },
      { type: 'control-ack', status: 'accepted', ref: 0 },
      { type: 'user', text: 'hi', timestamp: new Date(REPLAY_PLACEHOLDERS.epochMs + 50).toISOString(), cwd: '/replay/cwd', physicalCwd: '/replay/cwd' },
      { type: 'info', refs: [1] },
      { type: 'result', stopReason: 'stop', finalText: 'cut', truncated: true },
      { type: 'exit', status: 'cancelled' },
    ]);
    expect(script.steps[1]!.after).toBe(0);
    expect(script.steps.filter((step) => step.after !== undefined)).toHaveLength(1);
  });

  it("subvisor's own exit (synthetic) is not replayed as an event: it is the script's end; one made from an exit code is the child's", () => {
    const killed = replayScriptOf(
      journalOf([{ kind: 'event', event: { type: 'exit', status: 'cancelled', synthetic: true, run: 'r1' } }], { killed: true, escalated: true, exitCode: null }),
    );
    expect(killed.steps).toEqual([]);
    expect(killed.end).toEqual({ exitLine: false, killed: true, escalated: true, exitCode: null });
    const hepExit = replayScriptOf(journalOf([{ kind: 'event', event: { type: 'exit', status: 'failed', exitCode: 3, run: 'r1' } }], { killed: false, escalated: false, exitCode: 3 }));
    expect(hepExit.steps.map((step) => step.event)).toEqual([{ type: 'exit', status: 'failed' }]);
    expect(hepExit.end).toEqual({ exitLine: true, killed: false, escalated: false, exitCode: 3 });
  });

  it('refuses a journal that left lines out', () => {
    expect(() => replayScriptOf(journalOf([{ kind: 'truncated', maxBytes: 65536, firstLeftOut: 'event user' }]))).toThrow(/cannot be replayed faithfully/);
  });

  it('spaces steps by nothing (compressed), the recorded gap (kept), or the gap over the speed, counted from the later of the previous step and the awaited control', () => {
    const controls = [{ type: 'prompt' as const, origin: 'task' as const, at: 500 }];
    const step = { at: 700, event: { type: 'user' } };
    expect(delayOf('compressed', step, 100, controls)).toBe(0);
    expect(delayOf('kept', step, 100, controls)).toBe(600);
    expect(delayOf({ speed: 4 }, step, 100, controls)).toBe(150);
    expect(delayOf('kept', { ...step, after: 0 }, 100, controls)).toBe(200);
  });
});

/** Records an in-memory run that streams, is steered (the steer injected), and answers. */
async function recordSteeredRun(): Promise<{ path: string; events: RunEvent[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'replay-'));
  dirs.push(dir);
  const { run, child }: InMemoryRun = createInMemoryRun({ task: 'the task' });
  const file = new JournalFile(dir, run.id, 1024 * 1024);
  recordRun(run, file, { runId: run.id, protocol: 'mew', command: 'ws://127.0.0.1:1/' }, []);
  const events: RunEvent[] = [];
  run.on('event', (event) => events.push(event));
  child.onControl = ({ ref, control }) => {
    if (control.type === 'prompt') {
      child.ack(ref, 'accepted');
      child.turnStarted();
      child.event({ type: 'info', nativeType: 'status', extra: { detail: 'thinking' } });
      child.text('Hello');
    } else if (control.type === 'steer') {
      child.ack(ref, 'accepted');
      child.injected(ref);
      child.turnComplete('stop', { inputTokens: 5, outputTokens: 2, other: { reasoning: 1 } });
    } else if (control.type === 'close') {
      child.ack(ref, 'accepted');
      child.result('Hello, steered.');
      child.exit('done');
      child.gone();
    }
  };
  child.ready();
  await new Promise((resolve) => setTimeout(resolve, 5));
  const ack = await run.steer('steer it');
  expect(await ack.delivery).toBe('injected');
  await run.outcome;
  return { path: file.path, events };
}

const withoutEnvelope = (events: RunEvent[]) => events.map(({ seq: _seq, run: _run, ...rest }: RunEvent & { seq?: number; run?: string }) => rest);

describe('replayRun (in memory)', () => {
  it('plays the recorded events with their shapes (another protocol\'s fields included), acking the same controls with fresh seqs, the delivery and the answer too', async () => {
    const recorded = await recordSteeredRun();
    const { run } = replayRun(recorded.path, { controls: 'caller' });
    const events: RunEvent[] = [];
    run.on('event', (event) => events.push(event));
    await new Promise<void>((resolve) => run.on('state', (state) => state === 'running' && resolve()));
    const ack = await run.steer('steer it');
    expect(ack.status).toBe('accepted');
    expect(await ack.delivery).toBe('injected');
    const outcome = await run.outcome;
    expect(outcome).toMatchObject({ status: 'done', finalText: 'Hello, steered.', usage: { inputTokens: 5, outputTokens: 2 } });
    expect(withoutEnvelope(events)).toEqual(withoutEnvelope(recorded.events));
    expect(events.find((event) => event.type === 'info')).toEqual(expect.objectContaining({ nativeType: 'status', extra: { detail: 'thinking' } }));
    const acks = events.filter((event) => event.type === 'control-ack');
    expect(acks.map((event) => event.ref)).toEqual([1, 2, 3]);
  });

  it('rejects a control the recording did not see, saying what it expected, and goes on waiting for the one it did', async () => {
    const recorded = await recordSteeredRun();
    const { run } = replayRun(readJournal(recorded.path), { controls: 'caller' });
    await new Promise<void>((resolve) => run.on('state', (state) => state === 'running' && resolve()));
    const wrong = await run.followUp('not this');
    expect(wrong).toMatchObject({ status: 'rejected', reason: "replay: the recording's control 2 was steer, not follow-up" });
    expect((await run.steer('steer it')).status).toBe('accepted');
    expect((await run.outcome).status).toBe('done');
  });

  it('sends the recorded caller\'s controls again by default: a caller that sends nothing gets the recorded run, the same acks and answer', async () => {
    const recorded = await recordSteeredRun();
    const { run, child } = replayRun(recorded.path);
    const events: RunEvent[] = [];
    run.on('event', (event) => events.push(event));
    const outcome = await run.outcome;
    expect(outcome).toMatchObject({ status: 'done', finalText: 'Hello, steered.' });
    expect(run.state).toBe('done');
    expect(withoutEnvelope(events)).toEqual(withoutEnvelope(recorded.events));
    // The steer went out again with its recorded text, through the run's own surface.
    expect(child.controls.map(({ control }) => control)).toEqual([
      { type: 'prompt', text: 'the task' },
      { type: 'steer', text: 'steer it' },
      { type: 'close' },
    ]);
  });

  it('controls: caller, and the caller never sends the recorded steer: the run ends failed after controlWaitMs, naming the control it waited for', async () => {
    const recorded = await recordSteeredRun();
    const started = Date.now();
    const { run } = replayRun(recorded.path, { controls: 'caller', controlWaitMs: 200 });
    const outcome = await run.outcome;
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    expect(outcome.status).toBe('failed');
    expect(outcome.error).toBe("replay: waited 200 ms for the recording's control 2 (steer, sent by the caller), which never came");
    expect(run.state).toBe('failed');
  });

  it('refuses a wrong controls or controlWaitMs', () => {
    expect(() => replayRun('never-read.jsonl', { controls: 'auto' as never })).toThrow(/options\.controls must be 'replayed' or 'caller'/);
    expect(() => replayRun('never-read.jsonl', { controlWaitMs: 0 })).toThrow(RangeError);
  });
});
