// Channel unit tests without a child process: the private run directory, the control writer, the FEN_WIRE_* env.
import { mkdtempSync, readFileSync, rmSync, statSync, existsSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { channelEnv, ControlWriter, createRunDirectory, removeRunDirectory } from '../../../src/channel/index.js';
import { decode, MAX_LINE_BYTES } from '../../../src/wire/index.js';

let stateDir: string;
beforeEach(() => {
  stateDir = mkdtempSync(join(tmpdir(), 'subvisor-channel-test-'));
});
afterEach(() => {
  rmSync(stateDir, { recursive: true, force: true });
});

describe('run directory', () => {
  it('is a fresh 0700 directory with empty 0600 control and event files', () => {
    const directory = createRunDirectory(stateDir);
    expect(directory.dir.startsWith(stateDir)).toBe(true);
    expect(statSync(directory.dir).mode & 0o777).toBe(0o700);
    for (const path of [directory.controlPath, directory.eventPath]) {
      const stat = statSync(path);
      expect(stat.isFile()).toBe(true);
      expect(stat.mode & 0o777).toBe(0o600);
      expect(stat.size).toBe(0);
    }
    removeRunDirectory(directory.dir);
    expect(existsSync(directory.dir)).toBe(false);
    expect(readdirSync(stateDir)).toEqual([]);
  });

  it('gives every run its own directory', () => {
    const a = createRunDirectory(stateDir);
    const b = createRunDirectory(stateDir);
    expect(a.dir).not.toBe(b.dir);
    removeRunDirectory(a.dir);
    removeRunDirectory(b.dir);
  });

  it('removal never throws, also for a directory already gone', () => {
    const directory = createRunDirectory(stateDir);
    removeRunDirectory(directory.dir);
    expect(() => removeRunDirectory(directory.dir)).not.toThrow();
  });

  it('throws when the state directory does not exist', () => {
    expect(() => createRunDirectory(join(stateDir, 'missing'))).toThrow(/ENOENT/);
  });
});

describe('control writer', () => {
  it('appends whole, valid lines with increasing seq', () => {
    const directory = createRunDirectory(stateDir);
    const writer = new ControlWriter(directory.controlPath, 'r1');
    const first = writer.send('prompt', { text: 'héllo ✓' });
    const second = writer.send('cancel');
    expect(first).toMatchObject({ ok: true, seq: 1 });
    expect(second).toMatchObject({ ok: true, seq: 2 });
    writer.close();
    const text = readFileSync(directory.controlPath, 'utf8');
    expect(text.endsWith('\n')).toBe(true);
    const lines = text.slice(0, -1).split('\n');
    expect(lines).toHaveLength(2);
    const decoded = lines.map((line) => decode(line, 'control'));
    expect(decoded[0]).toEqual({ ok: true, message: { v: 1, seq: 1, type: 'prompt', run: 'r1', text: 'héllo ✓' } });
    expect(decoded[1]).toEqual({ ok: true, message: { v: 1, seq: 2, type: 'cancel', run: 'r1' } });
    removeRunDirectory(directory.dir);
  });

  it('refuses a line of 65536 bytes or more without writing or consuming a seq', () => {
    const directory = createRunDirectory(stateDir);
    const writer = new ControlWriter(directory.controlPath, 'r1');
    const refused = writer.send('steer', { text: 'x'.repeat(MAX_LINE_BYTES) });
    expect(refused).toMatchObject({ ok: false, rejection: { code: 'too-large' } });
    expect(statSync(directory.controlPath).size).toBe(0);
    expect(writer.lastSeq).toBe(0);
    // The longest legal line goes through.
    const envelope = JSON.stringify({ v: 1, seq: 1, type: 'steer', run: 'r1', text: '' }).length;
    const fits = writer.send('steer', { text: 'y'.repeat(MAX_LINE_BYTES - 1 - envelope) });
    expect(fits).toMatchObject({ ok: true, seq: 1 });
    expect(statSync(directory.controlPath).size).toBe(MAX_LINE_BYTES);
    writer.close();
    removeRunDirectory(directory.dir);
  });

  it('refuses everything after close', () => {
    const directory = createRunDirectory(stateDir);
    const writer = new ControlWriter(directory.controlPath, 'r1');
    writer.close();
    writer.close();
    expect(writer.closed).toBe(true);
    expect(writer.send('cancel')).toMatchObject({ ok: false, closed: true });
    expect(statSync(directory.controlPath).size).toBe(0);
    removeRunDirectory(directory.dir);
  });

  it('appends after lines written before it was opened (O_APPEND)', () => {
    const directory = createRunDirectory(stateDir);
    const first = new ControlWriter(directory.controlPath, 'r1');
    first.send('prompt', { text: 'a' });
    const second = new ControlWriter(directory.controlPath, 'r1');
    second.send('prompt', { text: 'b' });
    first.close();
    second.close();
    expect(readFileSync(directory.controlPath, 'utf8').trim().split('\n')).toHaveLength(2);
    removeRunDirectory(directory.dir);
  });
});

describe('FEN_WIRE_* environment', () => {
  it('names the files and the run, and rounds the deadline up to whole seconds', () => {
    const directory = { dir: '/d', controlPath: '/d/c', eventPath: '/d/e' };
    expect(channelEnv(directory, 'run-7')).toEqual({
      FEN_WIRE_CONTROL_PATH: '/d/c',
      FEN_WIRE_EVENT_PATH: '/d/e',
      FEN_WIRE_RUN_ID: 'run-7',
    });
    expect(channelEnv(directory, 'r', 1_700_000_000_001).FEN_WIRE_DEADLINE).toBe('1700000001');
    expect(channelEnv(directory, 'r', 1_700_000_000_000).FEN_WIRE_DEADLINE).toBe('1700000000');
  });
});
