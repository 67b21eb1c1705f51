// Text helpers shared by the fake child and tests: expanding a TextSpec (and utf8Prefix, from src/text).
import { utf8Prefix } from '../text/utf8.js';
import type { TextSpec } from './scenario.js';

export { utf8Prefix };

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
