// A small value that fits a JSON schema (JSON Schema or the Gemini API's OpenAPI subset), for the built-in answers
// of side requests that ask for JSON: Gemini CLI's routing and next-speaker checks, a title, a classification.
import { isObject } from './conversation.js';

/**
 * The value: an object with every property filled, the first enum value (`user` when the enum has it, so Gemini
 * CLI's next-speaker check hands the turn back to the user), `"scripted"` for a string, a number's minimum (else 1),
 * false, one-item arrays.
 */
export function valueFor(schema: unknown, depth = 0): unknown {
  if (!isObject(schema) || depth > 8) return null;
  const enumValues = schema['enum'];
  if (Array.isArray(enumValues) && enumValues.length > 0) return enumValues.includes('user') ? 'user' : enumValues[0];
  if ('const' in schema) return schema['const'];
  const anyOf = schema['anyOf'] ?? schema['oneOf'];
  if (Array.isArray(anyOf) && anyOf.length > 0) return valueFor(anyOf[0], depth + 1);
  const declared = schema['type'];
  const type = String(Array.isArray(declared) ? declared[0] : (declared ?? (isObject(schema['properties']) ? 'object' : 'string'))).toLowerCase();
  switch (type) {
    case 'object': {
      const properties = isObject(schema['properties']) ? schema['properties'] : {};
      return Object.fromEntries(Object.entries(properties).map(([key, sub]) => [key, valueFor(sub, depth + 1)]));
    }
    case 'array':
      return [valueFor(schema['items'], depth + 1)];
    case 'integer':
    case 'number': {
      // 1 unless the schema bounds it elsewhere: Gemini CLI's router rejects a complexity_score below 1, which its
      // schema does not say (only its description: "from 1-100").
      const minimum = Number(schema['minimum'] ?? schema['exclusiveMinimum'] ?? Number.NaN);
      const maximum = Number(schema['maximum'] ?? Number.NaN);
      return Number.isFinite(minimum) ? Math.ceil(minimum) : Number.isFinite(maximum) && maximum < 1 ? Math.floor(maximum) : 1;
    }
    case 'boolean':
      return false;
    case 'null':
      return null;
    default:
      return 'scripted';
  }
}
