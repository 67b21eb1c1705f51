// Channel unit tests without a child process: the line tail and the event reader, fed by hand-written lines.
import { appendFileSync, mkdtempSync, readdirSync, renameSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EventReader, LineTail } from '../../../src/channel/index.js';
import { armedTailTimers, armedTickPeriods } from '../../../src/channel/tail-waker.js';
import { WakeGovernor } from '../../../src/channel/wake-governor.js';
import { tailRecorder as recorder } from '../../helpers/tail-recorder.js';
import type { ReaderRejection } from '../../../src/channel/index.js';
import { createSender, MAX_LINE_BYTES } from '../../../src/wire/index.js';
import type { WireEvent } from '../../../src/wire/index.js';

let dir: string;
let path: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'subvisor-tail-test-'));
  path = join(dir, 'events.jsonl');
  writeFileSync(path, '');
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** Polls `check` until it holds (the tail wakes up on fs.watch or its safety poll). */
async function until(check: () => boolean, timeoutMs = 20_000): Promise<void> {
  const start = Date.now();
  while (!check()) {
    if (Date.now() - start > timeoutMs) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('line tail: the file must stay the same file', () => {
  it('a file renamed over the path is reported as replaced, and nothing of it is read', () => {
    const { lines, reports, handlers } = recorder();
    const tail = new LineTail(path, handlers);
    tail.start();
    appendFileSync(path, '{"a":1}\n');
    tail.drain();
    const other = join(dir, 'other');
    writeFileSync(other, '{"forged":1}\n');
    renameSync(other, path);
    tail.drain();
    expect(lines).toEqual(['{"a":1}']);
    expect(reports).toEqual([expect.stringMatching(/^replaced: .*renamed over/)]);
    expect(tail.stopped).toBe(true);
  });

  it('a removed file, and a removed and re-created one, are reported', () => {
    for (const recreate of [false, true]) {
      writeFileSync(path, '');
      const { reports, handlers } = recorder();
      const tail = new LineTail(path, handlers);
      tail.start();
      rmSync(path);
      if (recreate) writeFileSync(path, '{"new":1}\n');
      tail.drain();
      expect(reports).toEqual([recreate ? expect.stringMatching(/replaced by another file/) : 'replaced: the event file was removed']);
      tail.close();
    }
  });

  it('truncated and written again past the read offset: the changed bytes before the offset give it away', () => {
    const { lines, reports, handlers } = recorder();
    const tail = new LineTail(path, handlers);
    tail.start();
    appendFileSync(path, '{"seq":1}\n{"seq":2}\n');
    tail.drain();
    truncateSync(path, 0);
    appendFileSync(path, '{"seq":9}\n{"seq":10}\n{"seq":11}\n');
    tail.drain();
    expect(lines).toEqual(['{"seq":1}', '{"seq":2}']);
    expect(reports).toEqual([expect.stringMatching(/^replaced: .*rewritten/)]);
  });

  it('a paused tail notices a swap at its next safety poll, without reading', () => {
    const { lines, reports, handlers } = recorder();
    let paused = false;
    const tail = new LineTail(path, handlers, { shouldPause: () => paused });
    tail.start();
    appendFileSync(path, '{"a":1}\n');
    tail.drain();
    paused = true;
    appendFileSync(path, '{"b":2}\n');
    rmSync(path);
    writeFileSync(path, '');
    tail.pollIfDue(Date.now() + 60_000);
    expect(lines).toEqual(['{"a":1}']);
    expect(reports).toEqual([expect.stringMatching(/replaced by another file/)]);
  });

  it('appends alone never look like a swap (witness kept across many small and large reads)', () => {
    const { lines, reports, handlers } = recorder();
    const tail = new LineTail(path, handlers);
    tail.start();
    for (let i = 0; i < 200; i++) {
      appendFileSync(path, `${JSON.stringify({ i, pad: 'p'.repeat(i * 7) })}\n`);
      if (i % 3 === 0) tail.drain();
    }
    appendFileSync(path, `${'z'.repeat(100_000)}`);
    tail.drain();
    appendFileSync(path, '\n{"last":1}\n');
    tail.drain();
    expect(reports).toEqual(['oversize']);
    expect(lines.at(-1)).toBe('{"last":1}');
    expect(lines).toHaveLength(201);
  });
});

describe('line tail', () => {
  it('hands on whole lines only and joins a line written in pieces', () => {
    const { lines, reports, handlers } = recorder();
    const tail = new LineTail(path, handlers);
    tail.start();
    appendFileSync(path, '{"a":1}\n{"b":');
    tail.drain();
    expect(lines).toEqual(['{"a":1}']);
    appendFileSync(path, '2');
    tail.drain();
    expect(lines).toEqual(['{"a":1}']);
    appendFileSync(path, '}\n\n');
    tail.drain();
    expect(lines).toEqual(['{"a":1}', '{"b":2}', '']);
    expect(reports).toEqual([]);
    tail.close();
  });

  it('wakes up on appends by itself (fs.watch or the safety poll)', async () => {
    const { lines, handlers } = recorder();
    const tail = new LineTail(path, handlers);
    tail.start();
    appendFileSync(path, 'one\n');
    await until(() => lines.length === 1);
    appendFileSync(path, 'two\n');
    await until(() => lines.length === 2);
    expect(lines).toEqual(['one', 'two']);
    tail.close();
  });

  it('drains a burst of many lines in order in one wake-up (no per-tick cap)', () => {
    const { lines, handlers } = recorder();
    const tail = new LineTail(path, handlers);
    tail.start();
    const expected = Array.from({ length: 20_000 }, (_, i) => `{"n":${i},"pad":"${'p'.repeat(i % 97)}"}`);
    appendFileSync(path, expected.join('\n') + '\n');
    tail.drain();
    expect(lines).toEqual(expected);
    tail.close();
  });

  it('keeps multi-byte characters whole across 64 KiB read boundaries', () => {
    const { lines, handlers } = recorder();
    const tail = new LineTail(path, handlers);
    tail.start();
    // 3-byte and 4-byte characters in lines whose boundaries fall at every offset of the chunk edge.
    const expected: string[] = [];
    for (let i = 0; i < 400; i++) expected.push('€'.repeat(100 + i) + '𝄞'.repeat(i % 7));
    appendFileSync(path, expected.join('\n') + '\n');
    tail.drain();
    expect(lines).toEqual(expected);
    tail.close();
  });

  it('passes a 65535-byte line and reports a 65536-byte line once, skipping it', () => {
    const { lines, reports, handlers } = recorder();
    const tail = new LineTail(path, handlers);
    tail.start();
    const longest = 'a'.repeat(MAX_LINE_BYTES - 1);
    appendFileSync(path, `${longest}\n${'b'.repeat(MAX_LINE_BYTES)}\nafter\n`);
    tail.drain();
    expect(lines).toEqual([longest, 'after']);
    expect(reports).toEqual(['oversize']);
    tail.close();
  });

  it('measures lines of multi-byte characters in bytes: 65535 bytes pass, 65536 are oversize', () => {
    const { lines, reports, handlers } = recorder();
    const tail = new LineTail(path, handlers);
    tail.start();
    // 21845 x 3 bytes = 65535 (fewer UTF-16 units than bytes: the unit count alone cannot tell).
    const threeByte = '€'.repeat(21_845);
    // 16384 x 4 bytes = 65536, as 32768 UTF-16 units (surrogate pairs).
    const fourByte = '𝄞'.repeat(16_384);
    const mixed = `${'€'.repeat(21_844)}ab`; // 65534 bytes
    const mixedLongest = `${'€'.repeat(21_844)}abc`; // 65535 bytes
    const mixedOver = `${'€'.repeat(21_844)}abcd`; // 65536 bytes
    appendFileSync(path, [threeByte, fourByte, mixed, mixedLongest, mixedOver, 'after'].join('\n') + '\n');
    tail.drain();
    expect(lines).toEqual([threeByte, mixed, mixedLongest, 'after']);
    expect(reports).toEqual(['oversize', 'oversize']);
    tail.close();
  });

  it('measures invalid UTF-8 as its raw bytes, not as the replacement characters it decodes to', () => {
    const { lines, reports, handlers } = recorder();
    const tail = new LineTail(path, handlers);
    tail.start();
    // 0xff is one invalid byte, decoded as U+FFFD (3 bytes if re-encoded): a 65535-byte line of them
    // must pass, a 65536-byte one must not, whatever the re-encoded length says.
    const invalid = (bytes: number) => Buffer.alloc(bytes, 0xff);
    const newline = Buffer.from('\n');
    appendFileSync(
      path,
      Buffer.concat([
        Buffer.from('{"ok":1}\n'),
        invalid(MAX_LINE_BYTES - 1),
        newline,
        invalid(MAX_LINE_BYTES),
        newline,
        Buffer.from('x'.repeat(30_000)),
        invalid(20_000),
        newline,
        Buffer.from('€after'),
        newline,
      ]),
    );
    tail.drain();
    expect(lines).toEqual([
      '{"ok":1}',
      '\uFFFD'.repeat(MAX_LINE_BYTES - 1),
      'x'.repeat(30_000) + '\uFFFD'.repeat(20_000),
      '€after',
    ]);
    expect(reports).toEqual(['oversize']);
    tail.close();
  });

  it('keeps a character split between two appends whole, and sizes the joined line exactly', () => {
    const { lines, reports, handlers } = recorder();
    const tail = new LineTail(path, handlers);
    tail.start();
    const euro = Buffer.from('€');
    // 21844 x 3 bytes, then a euro sign whose bytes arrive in two separate reads: 65535 bytes once whole.
    const head = Buffer.from('€'.repeat(21_844));
    appendFileSync(path, Buffer.concat([head, euro.subarray(0, 1)]));
    tail.drain();
    appendFileSync(path, Buffer.concat([euro.subarray(1), Buffer.from('\n')]));
    tail.drain();
    expect(lines).toEqual(['€'.repeat(21_845)]);
    expect(reports).toEqual([]);
    // One more byte in the same pieces is oversize.
    appendFileSync(path, Buffer.concat([head, Buffer.from('b'), euro.subarray(0, 2)]));
    tail.drain();
    appendFileSync(path, Buffer.concat([euro.subarray(2), Buffer.from('\nend\n')]));
    tail.drain();
    expect(lines.slice(1)).toEqual(['end']);
    expect(reports).toEqual(['oversize']);
    tail.close();
  });

  it('skips an oversize line arriving in pieces without holding it, reporting it once', () => {
    const { lines, reports, handlers } = recorder();
    const tail = new LineTail(path, handlers);
    tail.start();
    appendFileSync(path, 'before\n');
    for (let i = 0; i < 40; i++) {
      appendFileSync(path, 'x'.repeat(10_000));
      tail.drain();
    }
    expect(reports).toEqual(['oversize']);
    appendFileSync(path, 'tail-of-oversize\nafter\n');
    tail.drain();
    expect(lines).toEqual(['before', 'after']);
    expect(reports).toEqual(['oversize']);
    tail.close();
  });

  it('treats a file that shrank below the offset as fatal and stops', () => {
    const { lines, reports, handlers } = recorder();
    const tail = new LineTail(path, handlers);
    tail.start();
    appendFileSync(path, 'one\ntwo\n');
    tail.drain();
    truncateSync(path, 2);
    tail.drain();
    expect(reports).toEqual(['truncated 2 < 8']);
    expect(tail.stopped).toBe(true);
    appendFileSync(path, 'more lines\n');
    tail.drain();
    expect(lines).toEqual(['one', 'two']);
  });

  it('finish reads everything left, ignoring the pause, and reports an unterminated last line', () => {
    const { lines, reports, handlers } = recorder();
    const tail = new LineTail(path, handlers, { shouldPause: () => true });
    tail.start();
    appendFileSync(path, 'one\ntwo\nthr');
    tail.drain();
    expect(lines).toEqual([]);
    tail.finish();
    expect(lines).toEqual(['one', 'two']);
    expect(reports).toEqual(['incomplete 3']);
    expect(tail.stopped).toBe(true);
  });

  it('pauses between reads while asked to and resumes on the next drain', () => {
    const { lines, handlers } = recorder();
    let paused = false;
    const tail = new LineTail(path, { ...handlers, line: (text) => ((paused = true), lines.push(text)) }, {
      shouldPause: () => paused,
    });
    tail.start();
    appendFileSync(path, 'a\n');
    tail.drain();
    expect(lines).toEqual(['a']);
    appendFileSync(path, 'b\nc\n');
    tail.drain();
    expect(lines).toEqual(['a']);
    paused = false;
    tail.drain();
    expect(lines).toEqual(['a', 'b', 'c']);
    tail.close();
  });

  it('releases its file descriptors once closed or finished', () => {
    const openFds = () => readdirSync('/proc/self/fd').length;
    const before = openFds();
    const tails = Array.from({ length: 5 }, () => {
      const tail = new LineTail(path, recorder().handlers);
      tail.start();
      return tail;
    });
    expect(openFds()).toBeGreaterThanOrEqual(before + 5);
    tails.forEach((tail, i) => (i % 2 === 0 ? tail.close() : tail.finish()));
    expect(openFds()).toBeLessThanOrEqual(before);
  });
});

describe('event reader', () => {
  function readerFor(runId: string) {
    const events: WireEvent[] = [];
    const rejections: ReaderRejection[] = [];
    const reader = new EventReader(path, runId, {
      event: (event) => events.push(event),
      rejected: (rejection) => rejections.push(rejection),
    });
    reader.start();
    return { events, rejections, reader };
  }

  it('decodes valid events and reports every bad line without stopping', () => {
    const { events, rejections, reader } = readerFor('r1');
    const sender = createSender('event', 'r1');
    const ready = sender.next('ready');
    const started = sender.next('turn-started', { turn: 1 });
    if (!ready.ok || !started.ok) throw new Error('fixture');
    const lines = [
      ready.line,
      'not json',
      '[1,2]',
      '{"v":1,"seq":5,"type":"mystery","run":"r1"}',
      '{"v":1,"seq":1,"type":"ready","run":"r1"}',
      started.line.replace('"seq":2', '"seq":6'),
      '{"v":1,"seq":7,"type":"turn-started","run":"r1","turn":0}',
    ];
    appendFileSync(path, lines.join('\n') + '\n');
    reader.drain();
    expect(events.map((event) => [event.type, event.seq])).toEqual([
      ['ready', 1],
      ['turn-started', 6],
    ]);
    expect(rejections.map((rejection) => rejection.code)).toEqual([
      'malformed',
      'malformed',
      'unknown-type',
      'out-of-order',
      'invalid-payload',
    ]);
    expect(rejections.every((rejection) => !rejection.fatal)).toBe(true);
    expect(reader.stopped).toBe(false);
    reader.close();
  });

  it('stops on a version mismatch', () => {
    const { events, rejections, reader } = readerFor('r1');
    appendFileSync(path, '{"v":2,"seq":1,"type":"ready","run":"r1"}\n{"v":1,"seq":2,"type":"ready","run":"r1"}\n');
    reader.drain();
    expect(events).toEqual([]);
    expect(rejections).toMatchObject([{ code: 'version-mismatch', fatal: true }]);
    expect(reader.stopped).toBe(true);
  });

  it('stops on an event of another run', () => {
    const { events, rejections, reader } = readerFor('r1');
    appendFileSync(path, '{"v":1,"seq":1,"type":"ready","run":"other"}\n{"v":1,"seq":2,"type":"ready","run":"r1"}\n');
    reader.drain();
    expect(events).toEqual([]);
    expect(rejections).toMatchObject([{ code: 'foreign-run', fatal: true, run: 'other', seq: 1, type: 'ready' }]);
    expect(reader.stopped).toBe(true);
  });

  it('reports an oversize line as too-large, a truncated file as fatal', () => {
    const { events, rejections, reader } = readerFor('r1');
    appendFileSync(path, `${'z'.repeat(MAX_LINE_BYTES + 10)}\n{"v":1,"seq":1,"type":"ready","run":"r1"}\n`);
    reader.drain();
    expect(events.map((event) => event.type)).toEqual(['ready']);
    truncateSync(path, 0);
    reader.drain();
    expect(rejections.map((rejection) => [rejection.code, rejection.fatal])).toEqual([
      ['too-large', false],
      ['event-file-truncated', true],
    ]);
    expect(reader.stopped).toBe(true);
  });
});

describe('safety poll', () => {
  it('runs on the shared timer for every open tail, each when it is due, and stops with the last one', async () => {
    // Paused tails read nothing on a notification: only the safety poll finds that their files were swapped.
    const tails = Array.from({ length: 5 }, (_, n) => {
      const file = `${path}.${n}`;
      writeFileSync(file, '');
      const { reports, handlers } = recorder();
      const tail = new LineTail(file, handlers, { pollMs: 50 + 50 * n, shouldPause: () => true });
      tail.start();
      return { file, reports, tail };
    });
    expect(armedTailTimers()).toBe(1);
    for (const { file } of tails) {
      rmSync(file);
      writeFileSync(file, '');
    }
    await until(() => tails.every(({ reports }) => reports.length === 1));
    for (const { reports, tail } of tails) {
      expect(reports).toEqual([expect.stringMatching(/replaced by another file/)]);
      expect(tail.stopped).toBe(true);
    }
    expect(armedTailTimers()).toBe(0);
    for (const { file } of tails) rmSync(file);
  });


  it('reads appends on its own poll, backing off while idle', async () => {
    const { lines, handlers } = recorder();
    // pollIfDue runs synchronously right after the append, before any fs.watch callback can.
    const tail = new LineTail(path, handlers, { pollMs: 50 });
    tail.start();
    const now = Date.now();
    // Idle polls back off; a poll after new data reads it and resets the period.
    tail.pollIfDue(now + 1_000);
    tail.pollIfDue(now + 2_000);
    appendFileSync(path, 'late line\n');
    tail.pollIfDue(now + 10_000);
    expect(lines).toEqual(['late line']);
    tail.close();
  });
});

describe('latency budget', () => {
  it('reads a fast writer on the shared tick, every line in order, and watches again once it is quiet', async () => {
    const { lines, reports, handlers } = recorder();
    // A safety poll far away: only notifications and the budget's tick read here.
    const tail = new LineTail(path, handlers, { latencyBudgetMs: 20, pollMs: 60_000 });
    tail.start();
    for (let i = 0; i < 40; i++) {
      appendFileSync(path, `{"i":${i}}\n`);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    await until(() => lines.length === 40);
    expect(lines).toEqual(Array.from({ length: 40 }, (_, i) => `{"i":${i}}`));
    // Quiet: the tick finds nothing, the tail watches again and the budget's timer stops (the poll's stays).
    await until(() => armedTailTimers() === 1);
    appendFileSync(path, '{"sparse":1}\n');
    await until(() => lines.length === 41);
    expect(lines.at(-1)).toBe('{"sparse":1}');
    expect(reports).toEqual([]);
    tail.close();
    expect(armedTailTimers()).toBe(0);
  });

  it('a writer slower than the tick is read at once again, though it never paused for three ticks', async () => {
    const { lines, reports, handlers } = recorder();
    const tail = new LineTail(path, handlers, { latencyBudgetMs: 40, pollMs: 60_000 });
    tail.start();
    let i = 0;
    const write = () => appendFileSync(path, `{"i":${i++}}\n`);
    // Two lines within the budget: the tail moves onto the tick. A loaded machine can stretch the read of
    // the first past the budget (the second then comes after a quiet spell, read at once): write another pair.
    for (let pair = 0; pair < 20 && armedTailTimers() !== 2; pair++) {
      write();
      await until(() => lines.length === i);
      write();
      await until(() => lines.length === i || armedTailTimers() === 2);
    }
    expect(armedTailTimers()).toBe(2);
    // Then a line every 110 ms: at most two quiet 40 ms ticks in a row, but most reads three ticks after the last.
    let watching = false;
    // Within a few lines: the three-quiet-ticks rule alone would keep it on the tick for good.
    for (let n = 0; n < 10 && !watching; n++) {
      await new Promise((resolve) => setTimeout(resolve, 110));
      write();
      watching = armedTailTimers() === 1;
    }
    expect(watching).toBe(true);
    await until(() => lines.length === i);
    expect(lines).toEqual(Array.from({ length: i }, (_, n) => `{"i":${n}}`));
    expect(reports).toEqual([]);
    tail.close();
  });

  it('a tail closed while it reads on the tick leaves no timer behind', async () => {
    const { lines, handlers } = recorder();
    // A budget far longer than a loaded machine takes between two reads (200 ms was not, at load 10).
    const tail = new LineTail(path, handlers, { latencyBudgetMs: 5000, pollMs: 60_000 });
    tail.start();
    appendFileSync(path, 'a\n');
    await until(() => lines.length === 1);
    // Within the budget of the first read: the next notification moves the tail onto the tick.
    appendFileSync(path, 'b\n');
    await until(() => armedTailTimers() === 2);
    // A tenth under the budget: a timer that fires late still keeps the bound.
    expect(armedTickPeriods()).toEqual([4500]);
    tail.close();
    expect(armedTailTimers()).toBe(0);
    expect(lines).toEqual(['a']);
  });

  it("'auto' reads every notification at once while the process is not congested", async () => {
    const { lines, reports, handlers } = recorder();
    const calm = new WakeGovernor({ levels: [{ enterPerSecond: Number.POSITIVE_INFINITY, leavePerSecond: 0 }], windowMs: 250 });
    const tail = new LineTail(path, handlers, { latencyBudgetMs: 'auto', governor: calm, pollMs: 60_000 });
    tail.start();
    for (let i = 0; i < 40; i++) {
      appendFileSync(path, `{"i":${i}}\n`);
      await until(() => lines.length === i + 1);
      // Only the safety poll's timer: no coalescing tick was ever needed.
      expect(armedTailTimers()).toBe(1);
    }
    expect(reports).toEqual([]);
    tail.close();
    expect(armedTailTimers()).toBe(0);
  });

  it("'auto' coalesces a fast writer while the process is congested, and watches again once it calms down", async () => {
    const { lines, reports, handlers } = recorder();
    // Entered at 1000 wake-ups/s (50 per 50 ms window), left below 500/s: the pre-fed burst congests it, the
    // tail's own tick (one wake-up per 20 ms) then cannot keep it congested.
    const governor = new WakeGovernor({ levels: [{ enterPerSecond: 1000, leavePerSecond: 500 }], windowMs: 50 });
    for (let i = 0; i < 60; i++) governor.wake(Date.now());
    expect(governor.level(Date.now())).toBe(1);
    const tail = new LineTail(path, handlers, { latencyBudgetMs: 'auto', governor, pollMs: 60_000 });
    tail.start();
    let coalesced = false;
    let i = 0;
    const write = () => appendFileSync(path, `{"i":${i++}}\n`);
    while (!coalesced && i < 2000) {
      write();
      await new Promise((resolve) => setTimeout(resolve, 2));
      coalesced = armedTailTimers() === 2;
    }
    expect(coalesced).toBe(true);
    // The writer goes on at ~200 lines/s: below the leaving rate, so the tail watches again while lines still come.
    let watching = false;
    for (let n = 0; n < 400 && !watching; n++) {
      write();
      await new Promise((resolve) => setTimeout(resolve, 5));
      watching = armedTailTimers() === 1;
    }
    expect(watching).toBe(true);
    expect(governor.level(Date.now())).toBe(0);
    await until(() => lines.length === i);
    expect(lines).toEqual(Array.from({ length: i }, (_, n) => `{"i":${n}}`));
    expect(reports).toEqual([]);
    tail.close();
    expect(armedTailTimers()).toBe(0);
  });

  it("'auto' reads a busy file on the 30 ms tick while the process is crowded, and moves it back to 25 ms once it is not", async () => {
    const { lines, reports, handlers } = recorder();
    // Congested throughout; crowded until the test says otherwise.
    let crowded = true;
    const governor = { wake: () => undefined, level: () => (crowded ? 2 : 1) };
    const tail = new LineTail(path, handlers, { latencyBudgetMs: 'auto', governor, pollMs: 60_000 });
    tail.start();
    let i = 0;
    const write = () => appendFileSync(path, `{"i":${i++}}\n`);
    const writeUntil = async (done: () => boolean) => {
      for (let n = 0; n < 2000 && !done(); n++) {
        write();
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
      return done();
    };
    expect(await writeUntil(() => armedTickPeriods().length > 0)).toBe(true);
    expect(armedTickPeriods()).toEqual([30]);
    crowded = false;
    // The next tick that reads moves the tail (lines keep coming, so it stays on a tick).
    expect(await writeUntil(() => armedTickPeriods()[0] === 25)).toBe(true);
    expect(armedTickPeriods()).toEqual([25]);
    await until(() => lines.length === i);
    expect(lines).toEqual(Array.from({ length: i }, (_, n) => `{"i":${n}}`));
    expect(reports).toEqual([]);
    tail.close();
    expect(armedTailTimers()).toBe(0);
  });
});
