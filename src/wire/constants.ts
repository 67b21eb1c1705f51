// Protocol constants of Fen's wire protocol, version 1.

/** The only protocol version this implementation speaks. */
export const WIRE_VERSION = 1;

/** A line of this many UTF-8 bytes or more (not counting its newline) is `too-large`. */
export const MAX_LINE_BYTES = 65536;

/** The largest legal `seq` (2^53 - 1). */
export const MAX_SEQ = Number.MAX_SAFE_INTEGER;

/** The user message of the tool-free turn when `finalize` carries no note (Fen's child). */
export const DEFAULT_FINALIZE_NOTE =
  'Stop working now. Without calling tools, give your final answer from what you have so far.';

/** Fen's transport bounds for display events (applied by a child before it writes them). */
export const TRANSPORT_BOUNDS = {
  payloadBytes: 12 * 1024,
  stringBytes: 4 * 1024,
  tableEntries: 64,
  depth: 8,
  summaryBytes: 160,
} as const;
