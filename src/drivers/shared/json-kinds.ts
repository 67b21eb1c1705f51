// Reading JSON frames of any driver: the kinds a field is checked against, and typed reads of one field.
import type { JsonObject } from '../../wire/index.js';

/** The kind of JSON value a frame field must hold (`natural`: an integer >= 0, such as a turn number). */
export type JsonKind = 'string' | 'integer' | 'natural' | 'number' | 'boolean' | 'array' | 'object';

/** A JSON object (not null, not an array). */
export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Whether `value` is of `kind` (an integer is a safe integer; a number is finite). */
export function isKind(value: unknown, kind: JsonKind): boolean {
  switch (kind) {
    case 'string':
      return typeof value === 'string';
    case 'integer':
      return Number.isSafeInteger(value);
    case 'natural':
      return Number.isSafeInteger(value) && (value as number) >= 0;
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'boolean':
      return typeof value === 'boolean';
    case 'array':
      return Array.isArray(value);
    case 'object':
      return isObject(value);
  }
}

/** `a string`, `an integer`...: the kind with its article, for error messages. */
export function withArticle(kind: JsonKind | 'any'): string {
  if (kind === 'natural') return 'an integer >= 0';
  return kind === 'integer' || kind === 'object' || kind === 'array' || kind === 'any' ? `an ${kind}` : `a ${kind}`;
}

/** A string field of a frame, or undefined (absent, null or not a string). */
export function stringField(frame: JsonObject, name: string): string | undefined {
  const value = frame[name];
  return typeof value === 'string' ? value : undefined;
}

/** A count field of a frame: a finite number >= 0, or undefined. */
export function countField(frame: JsonObject, name: string): number | undefined {
  const value = frame[name];
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;
}
