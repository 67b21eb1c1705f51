// The lines of the fast-writer flood: built once, the same in the child that writes them and the ceiling that parses them.

/** Lines handed to one writeSync: about 1 MB of 200 B lines, so the writer outpaces any reader. */
export const LINES_PER_WRITE = 5000;

/**
 * `count` `assistant-text-delta` lines of about `bytes` bytes each (newline included), run `runId`,
 * seq from `firstSeq`, as one string per write of LINES_PER_WRITE lines.
 */
export function fastFloodBatches({ runId, firstSeq, count, bytes }) {
  const batches = [];
  let batch = '';
  for (let index = 0; index < count; index++) {
    const head = `{"v":1,"seq":${firstSeq + index},"type":"assistant-text-delta","run":${JSON.stringify(runId)},"timestamp":"2026-12-05T10:00:00.000Z","content-index":0,"delta":"`;
    batch += `${head}${'x'.repeat(Math.max(0, bytes - head.length - 3))}"}\n`;
    if ((index + 1) % LINES_PER_WRITE === 0 || index === count - 1) {
      batches.push(batch);
      batch = '';
    }
  }
  return batches;
}
