// The orphan sweep: run directories whose parent died are removed by the next parent, nothing else is.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createRunDirectory, removeRunDirectory, sweepOrphanedRunDirectories } from '../../../src/channel/index.js';

const namespace = /^pid:\[(\d+)\]$/.exec(readlinkSync('/proc/self/ns/pid'))![1]!;
const made: string[] = [];

function stateDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'subvisor-sweep-test-'));
  made.push(dir);
  return dir;
}

/** A pid that was just in use and has exited (reaped), so no process has it now. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'console.log(process.pid)'], { encoding: 'utf8' });
  return Number(child.stdout.trim());
}

function channelDir(parent: string, name: string, extra: string[] = []): string {
  const dir = join(parent, name);
  mkdirSync(dir, { mode: 0o700 });
  for (const file of ['control.jsonl', 'events.jsonl', ...extra]) writeFileSync(join(dir, file), '{}\n');
  return dir;
}

afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('sweepOrphanedRunDirectories', () => {
  it('removes the directory of a dead parent and keeps everything else', () => {
    const parent = stateDir();
    const dead = deadPid();
    const orphan = channelDir(parent, `subvisor-run-${namespace}-${dead}-abc123`);
    const live = channelDir(parent, `subvisor-run-${namespace}-${process.ppid}-abc123`);
    const otherNamespace = channelDir(parent, `subvisor-run-1-${dead}-abc123`);
    const kept = channelDir(parent, `subvisor-kept-abc123`);
    const unrelated = channelDir(parent, `subvisor-${dead}-abc123`);
    const crowded = channelDir(parent, `subvisor-run-${namespace}-${dead}-xyz789`, ['notes.txt']);
    const target = stateDir();
    writeFileSync(join(target, 'precious'), 'keep me');
    symlinkSync(target, join(parent, `subvisor-run-${namespace}-${dead}-link00`));

    expect(sweepOrphanedRunDirectories(parent)).toBe(1);

    expect(existsSync(orphan)).toBe(false);
    for (const dir of [live, otherNamespace, kept, unrelated]) {
      expect(readdirSync(dir).sort()).toEqual(['control.jsonl', 'events.jsonl']);
    }
    expect(readdirSync(crowded)).toContain('notes.txt');
    expect(readdirSync(target)).toEqual(['precious']);
    expect(existsSync(join(parent, `subvisor-run-${namespace}-${dead}-link00`))).toBe(true);
  });

  it('runs once per state directory per process, from createRunDirectory', () => {
    const parent = stateDir();
    const orphan = channelDir(parent, `subvisor-run-${namespace}-${deadPid()}-aaaaaa`);
    const first = createRunDirectory(parent);
    expect(existsSync(orphan)).toBe(false);
    expect(first.dir).toMatch(new RegExp(`subvisor-run-${namespace}-${process.pid}-[A-Za-z0-9]{6}$`));

    const later = channelDir(parent, `subvisor-run-${namespace}-${deadPid()}-bbbbbb`);
    const second = createRunDirectory(parent);
    expect(existsSync(later)).toBe(true);
    expect(sweepOrphanedRunDirectories(parent)).toBe(0);

    removeRunDirectory(first.dir);
    removeRunDirectory(second.dir);
  });

  it('never sweeps a directory kept for debugging', () => {
    const parent = stateDir();
    const kept = createRunDirectory(parent, { keep: true });
    expect(kept.dir).toMatch(/subvisor-kept-[A-Za-z0-9]{6}$/);
    removeRunDirectory(kept.dir);
  });
});
