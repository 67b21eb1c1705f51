// Token usage sums: adds a turn's usage object into the run's running total.
import type { JsonObject, JsonValue } from '../wire/index.js';

/** Adds the numeric fields of `usage` into `total` (nested objects recursively); other values are kept from the first. */
export function addUsage(total: JsonObject, usage: JsonObject): void {
  for (const [key, value] of Object.entries(usage)) {
    if (key === '__proto__') continue;
    const current = total[key];
    if (typeof value === 'number' && Number.isFinite(value)) {
      total[key] = (typeof current === 'number' ? current : 0) + value;
    } else if (isObject(value)) {
      const nested: JsonObject = isObject(current) ? current : {};
      addUsage(nested, value);
      total[key] = nested;
    } else if (current === undefined) {
      total[key] = value;
    }
  }
}

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
