// Every protocol, against its fake: the run, turn and tool spans with their parents and attributes, and the run span's context in the child (TRACEPARENT) or the daemon's handshake.
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FEN, PROTOCOLS } from '../../helpers/matrix-protocols.js';
import { installTelemetry, isChildOf, traceparentOf } from '../../helpers/telemetry.js';
import type { TestTelemetry } from '../../helpers/telemetry.js';

/** The child's environment as it was exec'd (read while it runs). */
function environOf(pid: number): Record<string, string> {
  const env: Record<string, string> = {};
  for (const entry of readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')) {
    const at = entry.indexOf('=');
    if (at > 0) env[entry.slice(0, at)] = entry.slice(at + 1);
  }
  return env;
}

let telemetry: TestTelemetry;
let stateDir: string;
beforeAll(() => {
  telemetry = installTelemetry();
  stateDir = mkdtempSync(join(tmpdir(), 'telemetry-'));
});
afterAll(async () => {
  await telemetry.uninstall();
  rmSync(stateDir, { recursive: true, force: true });
});

describe.each(PROTOCOLS.map((protocol) => [protocol.name, protocol] as const))('%s', (name, protocol) => {
  it('traces the run, its turns and its tool calls, and hands the run span to the child', async () => {
    telemetry.reset();
    const started = await protocol.start('honest', stateDir);
    const { run } = started;
    let childEnv: Record<string, string> | undefined;
    // At once (spawn returns once the child exec'd), else at ready: a fast child (HEP's) may be gone by the time its header is read.
    const readEnv = () => {
      if (childEnv !== undefined || run.pid === undefined) return;
      try {
        childEnv = environOf(run.pid);
      } catch {
        // Gone already: the assertion below says so.
      }
    };
    readEnv();
    run.on('state', (state) => state === 'ready' && readEnv());
    const outcome = await run.outcome;
    await started.cleanup();
    expect(outcome.status).toBe('done');

    const runSpans = telemetry.named('invoke_agent');
    expect(runSpans).toHaveLength(1);
    const runSpan = runSpans[0]!;
    expect(runSpan.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'subvisor.protocol': name,
      'subvisor.run.id': run.id,
      'subvisor.run.status': 'done',
    });
    const turns = telemetry.named('turn');
    expect(turns.length).toBeGreaterThan(0);
    for (const turn of turns) expect(isChildOf(turn, runSpan)).toBe(true);
    const tools = telemetry.spans().filter((span) => span.name.startsWith('execute_tool '));
    expect(tools.length).toBeGreaterThan(0);
    for (const tool of tools) {
      expect(turns.some((turn) => isChildOf(tool, turn))).toBe(true);
      expect(tool.attributes['gen_ai.tool.name']).toBe(tool.name.slice('execute_tool '.length));
    }

    const traceparent = traceparentOf(runSpan);
    if (started.handshakes === undefined) {
      // A child process: its environment, read while it ran.
      expect(childEnv?.['TRACEPARENT']).toBe(traceparent);
    } else {
      // A daemon: the WebSocket handshake, where W3C Trace Context puts it in an HTTP request.
      expect(started.handshakes()[0]?.['traceparent']).toBe(traceparent);
    }
  });
});

describe('span events of a misbehaving child', () => {
  it("records the child's rejected lines, and each step of the kill ladder", async () => {
    telemetry.reset();
    for (const cell of ['garbage', 'stubborn'] as const) {
      const started = await FEN.start(cell, stateDir);
      await started.run.outcome;
      await started.cleanup();
    }
    const [garbage, stubborn] = telemetry.named('invoke_agent');
    const rejected = garbage!.events.filter((event) => event.name === 'subvisor.rejected');
    expect(rejected.length).toBeGreaterThan(0);
    expect(rejected[0]!.attributes).toMatchObject({ 'subvisor.rejected.fatal': false });
    const kills = stubborn!.events.filter((event) => event.name === 'subvisor.kill').map((event) => event.attributes?.['subvisor.kill.signal']);
    expect(kills).toEqual(['SIGTERM', 'SIGKILL']);
    expect(stubborn!.attributes).toMatchObject({ 'subvisor.run.killed': true, 'subvisor.run.escalated': true });
  });
});
