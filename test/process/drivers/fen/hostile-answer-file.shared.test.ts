// final-text-path attacks against real processes: hard links, symlinks, shared or old files, oversize temp files, /proc.
import { existsSync, linkSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Outcome } from '../../../../src/index.js';
import { hostileRun, scratchDir } from '../../../helpers/hostile-run.js';
import type { HostileStep } from '../../../helpers/hostile-run.js';
import { within } from '../../../helpers/spawn-harness.js';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

function scratch(): string {
  const made = scratchDir();
  cleanups.push(made.cleanup);
  return made.dir;
}

/** A child that says ready, takes the task, makes its answer file as `answerFile` says, names it in `result`, exits done. */
async function answerWith(answerFile: Record<string, unknown>, options: { maxFinalTextBytes?: number } = {}): Promise<Outcome> {
  const steps: HostileStep[] = [{ ready: true }, { ack: 'task' }, { answerFile }, { exit: 'done' }];
  const hostile = hostileRun(steps, options);
  cleanups.push(hostile.cleanup);
  const outcome = await within(hostile.run.outcome, 30_000, 'outcome');
  expect(outcome.status).toBe('done');
  expect(hostile.leftovers()).toEqual([]);
  return outcome;
}

function expectRefused(outcome: Outcome, code: string, removed = false): void {
  expect(outcome.finalText).toBe('the cut text');
  expect(outcome.truncated).toBe(true);
  expect(outcome.truncationNote).toContain('was not read');
  expect(outcome.finalTextFileRefusal).toMatchObject({ code, removed });
}

describe('final-text-path: only the child\'s private temp file is read (and then removed)', () => {
  it('a fresh 0600 file of the child is read whole and removed', async () => {
    const dir = scratch();
    const outcome = await answerWith({ kind: 'own', dir, text: 'the cut text, then the whole answer, ünïcødé' });
    expect(outcome.finalText).toBe('the cut text, then the whole answer, ünïcødé');
    expect(outcome.truncated).toBe(false);
    expect(outcome.finalTextFileRefusal).toBeUndefined();
    expect(existsSync(join(dir, 'answer.txt'))).toBe(false);
  });

  it('a hard link to /etc/passwd is neither read nor removed', async () => {
    const dir = scratch();
    let linked = true;
    try {
      linkSync('/etc/passwd', join(dir, 'probe'));
    } catch {
      linked = false; // protected_hardlinks (or another filesystem): the child cannot make it either
    }
    if (!linked) return;
    const outcome = await answerWith({ kind: 'hardlink', dir, name: 'passwd-link', target: '/etc/passwd' });
    // Root owns /etc/passwd: a run as root sees it as its own and stops at the link count.
    expectRefused(outcome, process.getuid?.() === 0 ? 'hard-linked' : 'foreign-owner');
    expect(outcome.finalText).not.toContain('root:');
    expect(existsSync(join(dir, 'passwd-link'))).toBe(true);
  });

  it("a hard link to a file of the parent's own is refused (two links) and both names stay", async () => {
    const dir = scratch();
    const precious = join(dir, 'precious.txt');
    writeFileSync(precious, 'PARENT SECRET', { mode: 0o600 });
    const outcome = await answerWith({ kind: 'hardlink', dir, name: 'link.txt', target: precious });
    expectRefused(outcome, 'hard-linked');
    expect(readFileSync(precious, 'utf8')).toBe('PARENT SECRET');
    expect(existsSync(join(dir, 'link.txt'))).toBe(true);
  });

  it("an existing file of the parent's, named directly, is refused as older than the run and kept", async () => {
    const dir = scratch();
    const precious = join(dir, 'notes.txt');
    writeFileSync(precious, 'PARENT NOTES', { mode: 0o600 });
    // Make sure its times are well before the run started, whatever the clock granularity.
    const past = new Date(Date.now() - 60_000);
    const { utimesSync } = await import('node:fs');
    utimesSync(precious, past, past);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const outcome = await answerWith({ kind: 'existing', target: precious });
    expectRefused(outcome, 'older-than-run');
    expect(readFileSync(precious, 'utf8')).toBe('PARENT NOTES');
  });

  it("an existing file of the parent's that the child touched to now is refused by its birth time, and kept", async () => {
    const dir = scratch();
    const precious = join(dir, 'notes.txt');
    writeFileSync(precious, 'the cut text of PARENT NOTES', { mode: 0o600 });
    const past = new Date(Date.now() - 60_000);
    const { utimesSync } = await import('node:fs');
    utimesSync(precious, past, past);
    // Only a filesystem that keeps birth times can tell a touched file from a new one.
    if (!(statSync(precious).birthtimeMs > 0)) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
    const outcome = await answerWith({ kind: 'touched-now', target: precious });
    expectRefused(outcome, 'older-than-run');
    expect(outcome.finalTextFileRefusal?.reason).toContain('created');
    expect(readFileSync(precious, 'utf8')).toBe('the cut text of PARENT NOTES');
  });

  it("the parent's own /proc/self/environ is refused (older than the run, or holding more than its size when its inode is fresh)", async () => {
    const outcome = await answerWith({ kind: 'existing', target: '/proc/self/environ' });
    expect(outcome.finalTextFileRefusal?.code).toMatch(/^(older-than-run|size-mismatch)$/);
    expectRefused(outcome, outcome.finalTextFileRefusal!.code);
  });

  it("the child's own /proc file (fresh, the parent's uid, one link, size 0) is refused: it holds more than its size", async () => {
    // The child lives on for a while after its result, so its /proc entry is still there when the parent looks.
    const steps: HostileStep[] = [{ ready: true }, { ack: 'task' }, { answerFile: { kind: 'proc-own' } }, { sleep: 1500 }, { exit: 'done' }];
    const hostile = hostileRun(steps);
    cleanups.push(hostile.cleanup);
    const outcome = await within(hostile.run.outcome, 30_000, 'outcome');
    expect(outcome.status).toBe('done');
    expectRefused(outcome, 'size-mismatch');
    expect(outcome.finalText).not.toContain('FEN_WIRE');
  });

  it('a private file shorter than the cut inline text is not the answer, and is kept', async () => {
    const dir = scratch();
    const outcome = await answerWith({ kind: 'own', dir, text: 'the cut' });
    expectRefused(outcome, 'shorter-than-cut');
    expect(existsSync(join(dir, 'answer.txt'))).toBe(true);
  });

  it('an empty private file is not the answer of a cut result', async () => {
    const dir = scratch();
    const outcome = await answerWith({ kind: 'own', dir, text: '' });
    expectRefused(outcome, 'shorter-than-cut');
  });

  it('a private file at least as long as the cut text is the answer, even when it does not begin with it', async () => {
    const dir = scratch();
    const outcome = await answerWith({ kind: 'own', dir, text: 'GOOD, WHOLE ANSWER' });
    expect(outcome).toMatchObject({ finalText: 'GOOD, WHOLE ANSWER', truncated: false });
    expect(existsSync(join(dir, 'answer.txt'))).toBe(false);
  });

  it('a file whose mtime the child set back is refused as older than the run', async () => {
    const dir = scratch();
    const outcome = await answerWith({ kind: 'touched-old', dir });
    expectRefused(outcome, 'older-than-run');
    expect(existsSync(join(dir, 'answer.txt'))).toBe(true);
  });

  it('a symlink to a file of ours is refused and kept', async () => {
    const dir = scratch();
    const target = join(dir, 'target.txt');
    writeFileSync(target, 'TARGET', { mode: 0o600 });
    const outcome = await answerWith({ kind: 'symlink', dir, name: 'link.txt', target });
    expectRefused(outcome, 'not-regular');
    expect(readFileSync(target, 'utf8')).toBe('TARGET');
  });

  it('a group-writable file is refused and kept', async () => {
    const dir = scratch();
    const outcome = await answerWith({ kind: 'group-writable', dir });
    expectRefused(outcome, 'shared-writable');
    expect(statSync(join(dir, 'answer.txt')).mode & 0o777).toBe(0o620);
  });

  it('a /proc file (size 0) of another process is refused as older than the run', async () => {
    const outcome = await answerWith({ kind: 'existing', target: `/proc/${process.ppid}/environ` });
    expect(outcome.finalTextFileRefusal?.code).toMatch(/older-than-run|foreign-owner|unreadable/);
    expect(outcome.finalText).toBe('the cut text');
  });

  it("an oversize temp file of the child's own is removed, and the truncation reported", async () => {
    const dir = scratch();
    const outcome = await answerWith({ kind: 'big', dir, bytes: 5000 }, { maxFinalTextBytes: 1000 });
    expectRefused(outcome, 'too-large', true);
    expect(outcome.truncationNote).toContain('1000-byte limit');
    expect(existsSync(join(dir, 'answer.txt'))).toBe(false);
  });

  it('a path that does not exist: unreadable', async () => {
    const dir = scratch();
    const outcome = await answerWith({ kind: 'existing', target: join(dir, 'missing.txt') });
    expectRefused(outcome, 'unreadable');
  });
});
