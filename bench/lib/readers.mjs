// Baseline event-file readers: Fen's 30 ms polling parent and a bare fs.watch reader (the floor). Both
// report every line with its receipt time (process.hrtime.bigint()).
import { closeSync, openSync, readSync, watch } from 'node:fs';

const CHUNK_BYTES = 64 * 1024;
const STAMP_KEY = '"mono-ns":"';

/** The `mono-ns` stamp of a raw event line, cut out without parsing it; null when it has none. */
export function rawStamp(line) {
  const at = line.indexOf(STAMP_KEY);
  if (at === -1) return null;
  const from = at + STAMP_KEY.length;
  return BigInt(line.slice(from, line.indexOf('"', from)));
}

/**
 * Reads what was appended to `fd` since `state.offset` and hands on each complete line (LF only), at most
 * `maxChunks` reads of the buffer; a partial last line is kept (copied) for the next call. Written the
 * way a careful hand-made reader would be, so the baselines are not slowed by the harness: lines are
 * decoded straight from the read buffer, and a read that comes back short is the end of the file (no
 * second read to find that out). Stops as soon as the reader was closed (a line callback may close it).
 */
function reader(fd, state, onLine) {
  // Room for a partial line (under 64 KiB: Fen's line bound) and one chunk after it.
  const buffer = Buffer.alloc(2 * CHUNK_BYTES);
  let pending = 0;
  return (maxChunks) => {
    for (let chunk = 0; chunk < maxChunks && !state.closed; chunk++) {
      const read = readSync(fd, buffer, pending, CHUNK_BYTES, state.offset);
      if (read === 0) return;
      state.offset += read;
      const end = pending + read;
      // Searched only up to what was read: past it the buffer holds an earlier read's bytes.
      const filled = buffer.subarray(0, end);
      let start = 0;
      for (let newline = filled.indexOf(10, pending); newline !== -1 && !state.closed; newline = filled.indexOf(10, start)) {
        onLine(filled.toString('utf8', start, newline));
        start = newline + 1;
      }
      // The partial last line moves to the front.
      pending = end - start;
      if (pending >= CHUNK_BYTES) throw new Error(`a line of ${CHUNK_BYTES} bytes or more (over Fen's bound)`);
      if (pending > 0 && start > 0) buffer.copy(buffer, 0, start, end);
      if (read < CHUNK_BYTES) return;
    }
  };
}

/**
 * Fen's parent cadence: every 30 ms read what is new (at most 4 x 64 KiB, as Fen drains at most 4 x 64
 * lines per tick), split it into lines and JSON.parse each one.
 * `onEvent(event, receivedNs)` gets each parsed event and its receipt time.
 */
export function pollingReader(path, onEvent, intervalMs = 30) {
  const fd = openSync(path, 'r');
  const state = { offset: 0, closed: false };
  const read = reader(fd, state, (line) => onEvent(JSON.parse(line), process.hrtime.bigint()));
  const timer = setInterval(() => read(4), intervalMs);
  return {
    close() {
      if (state.closed) return;
      state.closed = true;
      clearInterval(timer);
      closeSync(fd);
    },
  };
}

/**
 * The floor: fs.watch wake-up, synchronous reads until the end, line split; no JSON.parse, no
 * validation. `onLine(line, receivedNs)` gets each raw line and its receipt time.
 */
export function watchReader(path, onLine) {
  const fd = openSync(path, 'r');
  const state = { offset: 0, closed: false };
  const read = reader(fd, state, (line) => onLine(line, process.hrtime.bigint()));
  const watcher = watch(path, () => read(Number.POSITIVE_INFINITY));
  // A write that landed between open and watch would otherwise wait for the next one.
  read(Number.POSITIVE_INFINITY);
  return {
    close() {
      if (state.closed) return;
      state.closed = true;
      watcher.close();
      closeSync(fd);
    },
  };
}
