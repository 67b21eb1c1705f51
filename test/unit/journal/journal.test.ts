// The journal of a run, written from its public handle: what it holds, its bound, its privacy, its secrets, and reading it back.
import { chmodSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { JournalError, readJournal } from '../../../src/index.js';
import type { JournalEntry } from '../../../src/index.js';
import { JournalFile, journalNameOf } from '../../../src/journal/journal-file.js';
import { recordRun } from '../../../src/journal/run-journal.js';
import { resolveJournal } from '../../../src/api/journal-option.js';
import { createInMemoryRun } from '../../../src/testing/index.js';
import type { InMemoryRun } from '../../../src/testing/index.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function scratch(): string {
  const dir = mkdtempSync(join(tmpdir(), 'journal-'));
  dirs.push(dir);
  return dir;
}

/** An in-memory run recorded into a fresh journal directory. */
function recorded(options: { maxBytes?: number; secrets?: string[]; task?: string } = {}): InMemoryRun & { file: JournalFile; dir: string } {
  const dir = join(scratch(), 'journals');
  const started = createInMemoryRun({ task: options.task ?? 'do it', killGraceMs: 50 });
  const file = new JournalFile(dir, started.run.id, options.maxBytes ?? 1024 * 1024);
  recordRun(started.run, file, { runId: started.run.id, protocol: 'in-memory', command: 'in-memory' }, options.secrets ?? []);
  return { ...started, file, dir };
}

const kinds = (entries: JournalEntry[]) => entries.map((entry) => (entry.kind === 'event' ? `event ${entry.event.type}` : entry.kind));

/** Plays a run with a steer that is injected: ready, the task's turn, the steer, its delivery, the answer. */
async function playSteeredRun({ run, child }: InMemoryRun): Promise<void> {
  child.onControl = ({ ref, control }) => {
    if (control.type === 'prompt') {
      child.ack(ref, 'accepted');
      child.turnStarted();
    } else if (control.type === 'steer') {
      child.ack(ref, 'accepted');
      child.injected(ref);
      child.text('Done.');
      child.turnComplete('stop', { inputTokens: 3, outputTokens: 1 });
    } else if (control.type === 'close') {
      child.ack(ref, 'accepted');
      child.result('Done.');
      child.exit('done');
      child.gone();
    }
  };
  child.ready();
  await new Promise((resolve) => setTimeout(resolve, 5));
  await run.steer('focus on the tests');
  await run.outcome;
}

describe('the journal of a run', () => {
  it('holds the start, every event, each control with its ack and delivery, the states and the outcome, in the order the caller saw them; whole once the outcome resolves', async () => {
    const started = recorded({ task: 'do it' });
    await playSteeredRun(started);
    const journal = readJournal(started.file.path);
    expect(journal.start).toMatchObject({ kind: 'start', journal: 1, runId: started.run.id, protocol: 'in-memory', command: 'in-memory' });
    expect(journal.truncated).toBe(false);
    expect(journal.outcome?.outcome).toMatchObject({ status: 'done', finalText: 'Done.' });
    const seen = kinds(journal.entries);
    expect(seen[0]).toBe('start');
    expect(seen.at(-1)).toBe('outcome');
    for (const expected of ['control', 'event ready', 'event control-ack', 'ack', 'event steering-injected', 'delivery', 'event turn-complete', 'event result', 'event exit', 'state']) {
      expect(seen).toContain(expected);
    }
    const controls = journal.entries.filter((entry) => entry.kind === 'control');
    expect(controls.map((entry) => [entry.control, entry.origin, entry.text])).toEqual([
      ['prompt', 'task', 'do it'],
      ['steer', 'caller', 'focus on the tests'],
      ['close', 'auto', undefined],
    ]);
    const acks = journal.entries.filter((entry) => entry.kind === 'ack');
    expect(acks.map((entry) => [entry.control, entry.seq, entry.status])).toEqual([
      ['prompt', controls[0]!.seq, 'accepted'],
      ['steer', controls[1]!.seq, 'accepted'],
      ['close', controls[2]!.seq, 'accepted'],
    ]);
    expect(journal.entries.find((entry) => entry.kind === 'delivery')).toMatchObject({ seq: controls[1]!.seq, delivery: 'injected' });
    // Each control is journaled before its ack; the event order is the run's.
    expect(seen.indexOf('control')).toBeLessThan(seen.indexOf('ack'));
    const times = journal.entries.map((entry) => entry.at);
    expect(times).toEqual([...times].sort((a, b) => a - b));
  });

  it('is private: the directory 0700 (made when missing), the file 0600, created new (a second journal of the same run id is <id>.2.jsonl)', async () => {
    const started = recorded();
    await playSteeredRun(started);
    expect(statSync(started.dir).mode & 0o777).toBe(0o700);
    expect(statSync(started.file.path).mode & 0o777).toBe(0o600);
    const again = new JournalFile(started.dir, started.run.id, 65536);
    expect(again.path).toBe(join(started.dir, `${started.run.id}.2.jsonl`));
    again.discard();
    expect(existsSync(again.path)).toBe(false);
  });

  it('never names a file after a run id that is not a plain name (a path, a dot-dot): a digest instead', () => {
    expect(journalNameOf('run-1.a_b')).toBe('run-1.a_b');
    for (const id of ['../escape', 'a/b', '.hidden', 'x'.repeat(200), 'tab\there']) {
      expect(journalNameOf(id)).toMatch(/^run-[0-9a-f]{20}$/);
    }
    const dir = join(scratch(), 'j');
    const file = new JournalFile(dir, '../../etc/passwd', 65536);
    expect(readdirSync(dir)).toEqual([`${journalNameOf('../../etc/passwd')}.jsonl`]);
    file.discard();
  });

  it('refuses, with a JournalError, a directory others can read, a link, a file, and one it cannot create; nothing is written there', () => {
    const base = scratch();
    const open = join(base, 'open');
    mkdirSync(open, { mode: 0o755 });
    chmodSync(open, 0o755);
    expect(() => new JournalFile(open, 'r', 65536)).toThrow(JournalError);
    expect(() => new JournalFile(open, 'r', 65536)).toThrow(/open to other users \(mode 755\)/);
    expect(readdirSync(open)).toEqual([]);
    const target = join(base, 'target');
    mkdirSync(target, { mode: 0o700 });
    symlinkSync(target, join(base, 'link'));
    expect(() => new JournalFile(join(base, 'link'), 'r', 65536)).toThrow(/not a directory \(a link or a file\)/);
    writeFileSync(join(base, 'plain'), '');
    expect(() => new JournalFile(join(base, 'plain'), 'r', 65536)).toThrow(JournalError);
    expect(() => new JournalFile(join(base, 'plain', 'below'), 'r', 65536)).toThrow(/cannot create the journal directory/);
    expect(readdirSync(target)).toEqual([]);
  });

  it('stays within maxBytes: past the bound one truncated line, then only the outcome, which says how many lines were left out', async () => {
    const maxBytes = 65536;
    const { run, child, file } = recorded({ maxBytes });
    child.ready();
    await new Promise((resolve) => setTimeout(resolve, 5));
    child.turnStarted(1);
    for (let index = 0; index < 2000; index++) child.text(`chunk ${index} ${'x'.repeat(100)}`);
    child.turnComplete();
    child.result('the answer');
    child.exit('done');
    child.gone();
    await run.outcome;
    expect(statSync(file.path).size).toBeLessThanOrEqual(maxBytes);
    const journal = readJournal(file.path);
    expect(journal.truncated).toBe(true);
    const truncated = journal.entries.filter((entry) => entry.kind === 'truncated');
    expect(truncated).toHaveLength(1);
    expect(truncated[0]).toMatchObject({ maxBytes, firstLeftOut: 'event assistant-text-delta' });
    expect(journal.entries.at(-2)?.kind).toBe('truncated');
    expect(journal.outcome?.outcome.finalText).toBe('the answer');
    expect(journal.outcome!.leftOut).toBeGreaterThan(1000);
  });

  it('cuts an answer too large for its room at a character boundary, and says how large it was', async () => {
    const maxBytes = 65536;
    const { run, child, file } = recorded({ maxBytes });
    const answer = 'é'.repeat(60_000);
    child.onControl = ({ ref, control }) => {
      if (control.type === 'prompt') {
        child.ack(ref, 'accepted');
        child.turnStarted();
        child.turnComplete();
      } else if (control.type === 'close') {
        child.ack(ref, 'accepted');
        child.result(answer);
        child.exit('done');
        child.gone();
      }
    };
    child.ready();
    expect((await run.outcome).finalText).toBe(answer);
    expect(statSync(file.path).size).toBeLessThanOrEqual(maxBytes);
    const { outcome } = readJournal(file.path);
    expect(outcome?.cut).toEqual({ finalText: Buffer.byteLength(answer) });
    expect(outcome!.outcome.finalText!.length).toBeGreaterThan(1000);
    expect(answer.startsWith(outcome!.outcome.finalText!)).toBe(true);
  });

  it('never holds a secret: the token is redacted wherever it appears (a child echoing it, a control quoting it)', async () => {
    const secret = 's3cr3t-"token"-ü';
    const { run, child, file } = recorded({ secrets: [secret] });
    child.ready();
    await new Promise((resolve) => setTimeout(resolve, 5));
    child.turnStarted(1);
    child.text(`leaked ${secret} here`);
    void run.steer(`my token is ${secret}`).catch(() => undefined);
    child.turnComplete();
    child.exit('failed', `bad token ${secret}`);
    child.gone();
    await run.outcome;
    const text = readFileSync(file.path, 'utf8');
    expect(text).not.toContain('s3cr3t');
    expect(text).toContain('[redacted]');
  });

  it('closes its file with the run: no descriptor left open once the outcome resolves', async () => {
    const started = recorded();
    const openJournals = () =>
      readdirSync('/proc/self/fd').filter((fd) => {
        try {
          return readlinkSync(`/proc/self/fd/${fd}`) === started.file.path;
        } catch {
          return false;
        }
      });
    expect(openJournals()).toHaveLength(1);
    await playSteeredRun(started);
    expect(openJournals()).toEqual([]);
    expect(lstatSync(started.file.path).isFile()).toBe(true);
  });
});

describe('the journal option', () => {
  it('true: stateDir/subvisor-journals; a string: that directory; an object: its dir and maxBytes; wrong values are refused by name', () => {
    expect(resolveJournal(undefined, '/s')).toBeUndefined();
    expect(resolveJournal(false, '/s')).toBeUndefined();
    expect(resolveJournal(true, '/s')).toEqual({ dir: '/s/subvisor-journals', maxBytes: 16 * 1024 * 1024 });
    expect(resolveJournal('/j', '/s')).toEqual({ dir: '/j', maxBytes: 16 * 1024 * 1024 });
    expect(resolveJournal({ maxBytes: 100_000 }, '/s')).toEqual({ dir: '/s/subvisor-journals', maxBytes: 100_000 });
    expect(() => resolveJournal({ maxBytes: 10 }, '/s')).toThrow(RangeError);
    expect(() => resolveJournal({ dir: '' }, '/s')).toThrow(/journal.dir must be a non-empty string/);
    expect(() => resolveJournal({ path: '/x' }, '/s')).toThrow(/journal.path is not an option/);
    expect(() => resolveJournal(42, '/s')).toThrow(TypeError);
    expect(() => resolveJournal('a\0b', '/s')).toThrow(/NUL/);
  });
});

describe('readJournal', () => {
  it('reads a journal back, leaving out a last line cut short; refuses a file that is not one, naming the line', () => {
    const dir = scratch();
    const path = join(dir, 'j.jsonl');
    const start = JSON.stringify({ kind: 'start', at: 0, journal: 1, runId: 'r', protocol: 'fen', startedAt: 'x', command: 'fen' });
    writeFileSync(path, `${start}\n${JSON.stringify({ kind: 'event', at: 1, event: { type: 'ready', v: 1, seq: 1, run: 'r' } })}\n{"kind":"ev`);
    const journal = readJournal(path);
    expect(journal.entries).toHaveLength(2);
    expect(journal.outcome).toBeUndefined();
    writeFileSync(path, `${start}\nnot json\n`);
    expect(() => readJournal(path)).toThrow(/j.jsonl:2: not JSON/);
    writeFileSync(path, `${start}\n{"kind":"mystery","at":1}\n`);
    expect(() => readJournal(path)).toThrow(/:2: no known kind/);
    writeFileSync(path, `${JSON.stringify({ kind: 'start', at: 0, journal: 2 })}\n`);
    expect(() => readJournal(path)).toThrow(/journal format 2/);
    writeFileSync(path, `{"kind":"event","at":0,"event":{"type":"ready"}}\n`);
    expect(() => readJournal(path)).toThrow(/not a subvisor journal/);
  });
});
