// A replay step as a Fen wire line: camelCase fields back to the wire's keys, usage flattened, a rejected line written again as one.
import { camelKey } from '../../drivers/fen/to-run-event.js';
import { EVENT_SCHEMAS } from '../../wire/schema.js';
import type { RejectedCode } from '../../protocol/events.js';
import type { RawLine } from '../scenario.js';

/** What to write for one step: an event of Fen's (a wire type and its payload), or a line outside the protocol. */
export type FenLine = { type: string; payload: Record<string, unknown> } | { raw: RawLine };

/** Per wire event type, each field's RunEvent name to its wire key (`stopReason` -> `stop-reason`). */
const WIRE_KEYS = new Map<string, Map<string, string>>(
  [...EVENT_SCHEMAS].map(([type, spec]) => [type, new Map(spec.fields.map((field) => [camelKey(field.key), field.key]))]),
);

/** The raw line that makes a parent reject a line the same way (as near as one line can). */
const RAW_OF: Partial<Record<RejectedCode, RawLine>> = {
  'version-mismatch': { kind: 'wrong-version' },
  'foreign-run': { kind: 'foreign-run' },
  'unknown-type': { kind: 'unknown-type' },
  'invalid-payload': { kind: 'invalid-payload' },
  'too-large': { kind: 'oversized' },
  'out-of-order': { kind: 'out-of-order' },
};

/**
 * The Fen line of a normalized event (refs already turned into live seqs). Fields Fen declares for the
 * type get their wire keys back; `extra` is spread as it is (a Fen parent puts those keys under `extra`
 * again); fields another protocol declares, which Fen does not, are written under their own names (a
 * Fen parent puts them under `extra`). `transportNote` goes back into the text, where Fen writes it.
 */
export function fenLineOf(event: Record<string, unknown> & { type: string }): FenLine {
  if (event.type === 'rejected') return { raw: RAW_OF[event['code'] as RejectedCode] ?? { kind: 'garbage' } };
  const keys = WIRE_KEYS.get(event.type);
  // A frame Fen has no type for (HEP's passthrough): Fen rejects it as an unknown type, as it would.
  if (keys === undefined) return { raw: { kind: 'unknown-type', type: event.type } };
  const payload: Record<string, unknown> = {};
  const note = event['transportNote'];
  for (const [field, value] of Object.entries(event)) {
    if (field === 'type' || field === 'transportNote') continue;
    if (field === 'extra' && typeof value === 'object' && value !== null) Object.assign(payload, value);
    else if (field === 'usage' && typeof value === 'object' && value !== null) payload['usage'] = wireUsage(value as Record<string, unknown>);
    else payload[keys.get(field) ?? field] = value;
  }
  if (typeof note === 'string') {
    for (const key of ['text', 'delta']) if (typeof payload[key] === 'string') payload[key] = `${payload[key] as string}\n\n${note}`;
  }
  return { type: event.type, payload };
}

/** A camelCase Usage as a usage object a parent reads back to the same Usage (`other`'s keys at the top again). */
function wireUsage(usage: Record<string, unknown>): Record<string, unknown> {
  const { other, ...fields } = usage;
  return { ...(typeof other === 'object' && other !== null ? other : {}), ...fields };
}
