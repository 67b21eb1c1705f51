// supervise --protocol hep: a HEP child (the fake fa) works like a Fen run: the answer on stdout, exit codes, progress.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { fakeFa } from '../../../src/testing/index.js';
import type { FakeFa, FaBuiltinScenarioName } from '../../../src/testing/index.js';
import { runMain } from '../../helpers/cli-main.js';
import { runCli } from '../../helpers/cli-run.js';

const fakes: FakeFa[] = [];
afterEach(() => {
  for (const fake of fakes.splice(0)) {
    expect(fake.livePids()).toEqual([]);
    fake.cleanup();
  }
});

function supervise(scenario: FaBuiltinScenarioName, extra: string[] = []) {
  const fake = fakeFa(scenario);
  fakes.push(fake);
  return {
    fake,
    result: runCli(['--protocol', 'hep', '--task', 'fix the tests', ...extra, '--', fake.command, ...fake.args], { env: fake.env }),
  };
}

describe('supervise --protocol hep', () => {
  it('prints the last round as the answer on stdout, a progress summary on stderr, exit 0', async () => {
    const { fake, result } = supervise('tools');
    const { code, stdout, stderr } = await result;
    const answer = fake.transcript().frames.filter((frame) => frame['type'] === 'turn_done').at(-1)!['message'];
    expect(code).toBe(0);
    expect(stdout.toString().trimEnd()).toBe(String(answer));
    expect(stderr).toMatch(/run done \(3 turns/);
  });

  it('maps a provider error to exit 1 with the reason on stderr', async () => {
    const { result } = supervise('provider-error');
    const { code, stdout, stderr } = await result;
    expect(code).toBe(1);
    expect(stdout.toString()).toBe('');
    expect(stderr).toContain('overloaded');
  });

  it('a usage error of the child (exit 64) is a failed run: exit 1, the child stderr shown', async () => {
    const { result } = supervise('usage-error');
    const { code, stderr } = await result;
    expect(code).toBe(1);
    expect(stderr).toContain('--frobnicate');
  });

  it('--output events yields the same event stream as the API, ending with the outcome', async () => {
    const { result } = supervise('echo', ['--output', 'events']);
    const { code, stdout } = await result;
    const lines = stdout.toString().trim().split('\n').map((line) => JSON.parse(line) as { type: string });
    expect(code).toBe(0);
    expect(lines[0]!.type).toBe('ready');
    expect(lines.map((line) => line.type)).toContain('result');
    expect(lines.at(-1)!.type).toBe('outcome');
  });

  it('--tasks runs every task line over HEP too (the batch takes --protocol like a single run)', async () => {
    const fake = fakeFa('echo');
    fakes.push(fake);
    const dir = mkdtempSync(join(tmpdir(), 'subvisor-hep-batch-'));
    try {
      const tasks = join(dir, 'tasks.jsonl');
      writeFileSync(tasks, '"first task"\n"second task"\n');
      const { code, stdout } = await runCli(['--protocol', 'hep', '--tasks', tasks, '--', fake.command, ...fake.args], { env: fake.env });
      expect(code).toBe(0);
      const lines = stdout.toString().trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(lines.map((line) => line['status'])).toEqual(['done', 'done']);
      expect(fake.transcripts().map((transcript) => transcript.task).sort()).toEqual(['first task', 'second task']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('--stall-timeout cancels a child silent mid-round: exit 130, errorCode stalled', async () => {
    const fake = fakeFa({ rounds: [{ steps: [{ text: 'thinking it over... ' }, { pause: 60_000 }] }] });
    fakes.push(fake);
    const { code, stdout } = await runCli(
      ['--protocol', 'hep', '--task', 'x', '--stall-timeout', '500ms', '--grace', '1s', '-o', 'json', '--', fake.command, ...fake.args],
      { env: fake.env },
    );
    expect(code).toBe(130);
    expect(JSON.parse(stdout.toString())).toMatchObject({ status: 'cancelled', errorCode: 'stalled' });
  });

  it('rejects an unknown --protocol as a usage error', async () => {
    const { code, stderr } = await runMain(['--protocol', 'carrier-pigeon', '--task', 'x', '--', 'true']);
    expect(code).toBe(2);
    expect(stderr).toContain('--protocol "carrier-pigeon" is not one of fen, hep');
  });
});
