// Text helpers shared by the fake child and tests: expanding a TextSpec and cutting UTF-8 at a character boundary.
import type { TextSpec } from './scenario.js';

/**
 * The text a {@link TextSpec} stands for. `echo` is the text that started the turn. A `{ repeat, bytes }`
 * text stops at the last whole character that fits in `bytes` UTF-8 bytes.
 */
export function expandText(spec: TextSpec, echo = ''): string {
  if (typeof spec === 'string') return spec;
  if ('echo' in spec) return `${spec.prefix ?? ''}${echo}${spec.suffix ?? ''}`;
  const unit = spec.repeat;
  const unitBytes = Buffer.byteLength(unit);
  if (unitBytes === 0 || !(spec.bytes > 0)) return '';
  const whole = Math.floor(spec.bytes / unitBytes);
  return unit.repeat(whole) + utf8Prefix(unit, spec.bytes - whole * unitBytes);
}

/** The longest prefix of `text` of at most `maxBytes` UTF-8 bytes that does not split a character. */
export function utf8Prefix(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text) <= maxBytes) return text;
  const bytes = Buffer.from(text, 'utf8');
  let end = Math.max(0, maxBytes);
  // Back off continuation bytes (10xxxxxx) so the cut lands before a character's first byte.
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end -= 1;
  return bytes.subarray(0, end).toString('utf8');
}
