// A recording FuseraftIo + SessionFacts pair for the fuseraft session unit tests, with hand-fired timers.
import type { JsonObject } from '../../src/wire/index.js';
import type { EventDraft } from '../../src/drivers/shared/event-drafts.js';
import type { FrameRejection } from '../../src/drivers/shared/json-line.js';
import type { FuseraftIo, SessionFacts } from '../../src/drivers/fuseraft/session-io.js';

export interface Recorder {
  io: FuseraftIo;
  facts: SessionFacts;
  /** Lines written to stdin, in order. */
  written: JsonObject[];
  /** Every fact, in order, as [name, ...args]. */
  log: unknown[][];
  events: EventDraft[];
  rejections: Array<{ rejection: FrameRejection; fatal: boolean }>;
  deliveries: Array<[number, string]>;
  inputEnded: () => boolean;
  sigints: () => number;
  /** Timers armed and not cleared. */
  pendingTimers: () => number;
  /** Fires every pending timer. */
  fireTimers: () => void;
  /** Feeds frames (objects are JSON-encoded) to a session's onLine. */
  feed: (session: { onLine(line: string): void }, ...frames: Array<object | string>) => void;
}

export function recorder(options: { stdinBroken?: boolean } = {}): Recorder {
  const written: JsonObject[] = [];
  const log: unknown[][] = [];
  const events: EventDraft[] = [];
  const rejections: Recorder['rejections'] = [];
  const deliveries: Recorder['deliveries'] = [];
  const timers: Array<{ fn: () => void; cleared: boolean }> = [];
  let ended = false;
  let sigints = 0;
  const io: FuseraftIo = {
    write(line) {
      if (ended || options.stdinBroken === true) return false;
      written.push(JSON.parse(JSON.stringify(line)) as JsonObject);
      return true;
    },
    endInput() {
      ended = true;
      log.push(['endInput']);
    },
    interrupt() {
      sigints++;
      log.push(['SIGINT']);
    },
    setTimer(fn) {
      const timer = { fn, cleared: false };
      timers.push(timer);
      return { clear: () => void (timer.cleared = true) };
    },
  };
  const facts: SessionFacts = {
    ready: () => log.push(['ready']),
    session: () => undefined,
    event: (draft) => {
      events.push(draft);
      log.push(['event', draft.type]);
    },
    rejected: (rejection, fatal) => {
      rejections.push({ rejection, fatal });
      log.push(['rejected', rejection.code, fatal]);
    },
    ack: (ref, status, reason) => log.push(['ack', ref, status, reason]),
    delivery: (ref, delivery) => {
      deliveries.push([ref, delivery]);
      log.push(['delivery', ref, delivery]);
    },
    turnStarted: (turn) => log.push(['turnStarted', turn]),
    turnCompleted: (turn, stopReason, usage) => log.push(['turnCompleted', turn, stopReason, usage]),
    result: (report) => log.push(['result', report]),
    ending: () => log.push(['ending']),
  };
  return {
    io,
    facts,
    written,
    log,
    events,
    rejections,
    deliveries,
    inputEnded: () => ended,
    sigints: () => sigints,
    pendingTimers: () => timers.filter((timer) => !timer.cleared).length,
    fireTimers: () => {
      for (const timer of timers.splice(0)) if (!timer.cleared) timer.fn();
    },
    feed: (session, ...frames) => {
      for (const frame of frames) session.onLine(typeof frame === 'string' ? frame : JSON.stringify(frame));
    },
  };
}
