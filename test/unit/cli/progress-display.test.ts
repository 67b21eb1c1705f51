// How supervise shows progress: a live line only on a terminal without --quiet (its renderer loaded only then), notes otherwise.
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { progressDisplay } from '../../../src/cli/progress-display.js';

describe('progressDisplay', () => {
  it('plain notes without a terminal, nothing with --quiet: no live line is made', async () => {
    expect(await progressDisplay(false, false)).toEqual({ mode: 'plain' });
    expect(await progressDisplay(true, true)).toEqual({ mode: 'quiet' });
    expect(await progressDisplay(false, true)).toEqual({ mode: 'quiet' });
  });

  it('a terminal without --quiet gets a live line that draws on its stream', async () => {
    const display = await progressDisplay(true, false);
    expect(display.mode).toBe('live');
    const stream = Object.assign(new PassThrough(), { isTTY: true, columns: 80, rows: 24 });
    let written = '';
    stream.on('data', (chunk: Buffer) => (written += chunk.toString('utf8')));
    const line = display.liveLine!(stream);
    line('supervise: running');
    line.done();
    await new Promise((resolve) => setImmediate(resolve));
    expect(written).toContain('supervise: running');
  });
});
