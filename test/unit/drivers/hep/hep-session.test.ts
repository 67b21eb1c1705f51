// HEP's pure session: stdout lines and the exit code to run facts and events, with a recording sink (no process).
import { describe, expect, it } from 'vitest';
import { HepSession } from '../../../../src/drivers/hep/hep-session.js';
import { overlongRejection } from '../../../../src/drivers/shared/json-line.js';
import type { DriverSink } from '../../../../src/protocol/driver.js';

/** A sink that records every fact as `name args`, and the events' types in order. */
function recorder() {
  const facts: string[] = [];
  const events: Array<{ type: string; seq?: number; [key: string]: unknown }> = [];
  const record = (name: string) => (...args: unknown[]) => void facts.push(`${name} ${JSON.stringify(args)}`);
  const sink = {
    event: (event: { type: string }) => void events.push(event as (typeof events)[number]),
    rejected: (event: { type: string }) => void events.push(event as (typeof events)[number]),
    lineAhead: record('lineAhead'),
    session: record('session'),
    ready: record('ready'),
    ack: record('ack'),
    delivery: record('delivery'),
    turnStarted: record('turnStarted'),
    turnCompleted: record('turnCompleted'),
    toolCalled: record('toolCalled'),
    modelCall: record('modelCall'),
    result: (result: { stopReason: string }) => void facts.push(`result ${result.stopReason}`),
    exit: record('exit'),
    fatal: record('fatal'),
    broken: record('broken'),
    gone: record('gone'),
    blocked: record('blocked'),
    unblocked: record('unblocked'),
  } as unknown as DriverSink;
  return { sink, facts, events };
}

const line = (frame: object) => JSON.stringify(frame);
const HEADER = line({ type: 'hep_header', hep: 'v1', fah: '1.0', session: 's1' });
const clean = { exitCode: 0, signal: null, spawnFailed: false };

describe('HepSession', () => {
  it('a run of two rounds: ready, the task acked at agent_start, rounds as turns (state stays running), the last message as the answer, exit done', () => {
    const { sink, facts, events } = recorder();
    const session = new HepSession(sink, 'r1', 1);
    for (const frame of [
      HEADER,
      line({ type: 'agent_start', turn_id: 1 }),
      line({ type: 'tool_start', turn_id: 1, id: 't1', name: 'read', args_summary: 'path=a' }),
      line({ type: 'turn_done', turn_id: 1, message: '', tool_results: [{ id: 't1', name: 'read', ok: true, text: 'x' }], usage: { input: 10, output: 1, cost: 0.1 }, stop_reason: 'toolUse' }),
      line({ type: 'message_delta', turn_id: 2, delta: 'The answer.' }),
      line({ type: 'turn_done', turn_id: 2, message: 'The answer.', tool_results: [], usage: { input: 20, output: 3, cost: 0.2 }, stop_reason: 'stop' }),
    ]) session.line(frame);
    session.end(undefined, clean);
    expect(facts).toEqual([
      'session ["s1"]',
      'ready []',
      'ack [1,"accepted"]',
      'turnStarted [1]',
      'toolCalled []',
      'turnCompleted [{"turn":1,"stopReason":"toolUse","usage":{"inputTokens":10,"outputTokens":1,"costUsd":0.1},"idle":false}]',
      'turnStarted [2]',
      'turnCompleted [{"turn":2,"stopReason":"stop","usage":{"inputTokens":20,"outputTokens":3,"costUsd":0.2},"idle":false}]',
      'result stop',
      'exit [{"status":"done"}]',
    ]);
    expect(events.map((event) => event.type)).toEqual([
      'ready', 'control-ack', 'turn-started', 'tool-call', 'tool-result', 'turn-complete', 'turn-started', 'assistant-text-delta', 'turn-complete', 'result', 'exit',
    ]);
    expect(events.find((event) => event.type === 'result')).toMatchObject({ finalText: 'The answer.', usage: { inputTokens: 30, outputTokens: 4 } });
  });

  it('a wrong major version is fatal and nothing after it is read; exit 130 after cancelled is cancelled', () => {
    const wrong = recorder();
    const session = new HepSession(wrong.sink, 'r1', 1);
    session.line(line({ type: 'hep_header', hep: 'v2', fah: '1.0', session: 's' }));
    session.line(line({ type: 'agent_start', turn_id: 1 }));
    session.end(undefined, clean);
    expect(wrong.facts).toHaveLength(1);
    expect(wrong.facts[0]).toMatch(/^fatal \["version-mismatch","protocol failure \(version-mismatch\): /);
    const cancelled = recorder();
    const other = new HepSession(cancelled.sink, 'r1', 1);
    other.line(HEADER);
    other.line(line({ type: 'agent_start', turn_id: 1 }));
    other.line(line({ type: 'cancelled', turn_id: 1 }));
    other.end(undefined, { exitCode: 130, signal: null, spawnFailed: false });
    expect(cancelled.facts.at(-1)).toBe('exit [{"status":"cancelled","error":"the child was cancelled (exit 130)"}]');
  });

  it('garbage, an unknown frame and a line cut by the bound are rejected or passed through; a crash mid-round is no-exit-event', () => {
    const { sink, facts, events } = recorder();
    const session = new HepSession(sink, 'r1', 1);
    session.line(HEADER);
    session.line(line({ type: 'agent_start', turn_id: 1 }));
    session.line('this is not json {');
    session.line(line({ type: 'mystery_frame', turn_id: 1 }));
    session.overlong(overlongRejection('{"type":"message_delta",', 'stdout line 5', 100));
    session.end('{"type":"turn_do', { exitCode: 1, signal: null, spawnFailed: false });
    expect(events.filter((event) => event.type === 'rejected').map((event) => event['code'])).toEqual(['malformed', 'too-large', 'malformed']);
    expect(events.some((event) => event.type === 'passthrough')).toBe(true);
    expect(facts.at(-1)).toBe('exit [{"status":"failed","code":"no-exit-event","error":"the child exited with code 1 in the middle of a round (no terminal frame)"}]');
  });
});
