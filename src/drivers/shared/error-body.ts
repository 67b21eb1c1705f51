// An agent's error message as a person should read it: a provider's JSON error body, passed on whole, unwrapped to its own message.
import { isObject } from './json-kinds.js';

/**
 * `message` with a provider's JSON error body unwrapped to its `error.message` (or `message`); any other text
 * kept as it is. `firstOfArray`: a body that is a JSON array is read by its first element.
 */
export function unwrapErrorBody(message: string, firstOfArray: boolean): string {
  const body = message.trim();
  if (!body.startsWith('{') && !(firstOfArray && body.startsWith('['))) return message;
  try {
    let parsed: unknown = JSON.parse(body);
    if (Array.isArray(parsed)) parsed = parsed[0];
    if (isObject(parsed)) {
      const inner = parsed['error'];
      if (isObject(inner) && typeof inner['message'] === 'string' && inner['message'] !== '') return inner['message'];
      if (typeof parsed['message'] === 'string' && parsed['message'] !== '') return parsed['message'];
    }
  } catch {
    // not JSON after all: the text as it is
  }
  return message;
}
