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

/** Splits appended bytes into complete lines (LF only), keeping a partial last line for the next read. */
function lineSplitter(state, onLine) {
  let pending = Buffer.alloc(0);
  return (chunk) => {
    const data = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    let start = 0;
    let newline = data.indexOf(10, start);
    while (newline !== -1 && !state.closed) {
      onLine(data.toString('utf8', start, newline));
      start = newline + 1;
      newline = data.indexOf(10, start);
    }
    pending = Buffer.from(data.subarray(start));
  };
}

/**
 * Reads bytes appended to `fd` since `state.offset`, at most `maxChunks` reads; returns bytes read. Stops
 * as soon as the reader was closed (a line callback may close it mid-drain).
 */
function drain(fd, state, buffer, push, maxChunks) {
  let total = 0;
  for (let chunk = 0; chunk < maxChunks && !state.closed; chunk++) {
    const read = readSync(fd, buffer, 0, buffer.length, state.offset);
    if (read === 0) break;
    state.offset += read;
    total += read;
    push(Buffer.from(buffer.subarray(0, read)));
  }
  return total;
}

/**
 * Fen's parent cadence: every 30 ms read what is new (at most 4 x 64 KiB, as Fen drains at most 4 x 64
 * lines per tick), split it into lines and JSON.parse each one.
 * `onEvent(event, receivedNs)` gets each parsed event and its receipt time.
 */
export function pollingReader(path, onEvent, intervalMs = 30) {
  const fd = openSync(path, 'r');
  const state = { offset: 0, closed: false };
  const buffer = Buffer.alloc(CHUNK_BYTES);
  const push = lineSplitter(state, (line) => {
    const event = JSON.parse(line);
    onEvent(event, process.hrtime.bigint());
  });
  const timer = setInterval(() => drain(fd, state, buffer, push, 4), intervalMs);
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
  const buffer = Buffer.alloc(CHUNK_BYTES);
  const push = lineSplitter(state, (line) => onLine(line, process.hrtime.bigint()));
  const watcher = watch(path, () => drain(fd, state, buffer, push, Number.POSITIVE_INFINITY));
  // A write that landed between open and watch would otherwise wait for the next one.
  drain(fd, state, buffer, push, Number.POSITIVE_INFINITY);
  return {
    close() {
      if (state.closed) return;
      state.closed = true;
      watcher.close();
      closeSync(fd);
    },
  };
}
