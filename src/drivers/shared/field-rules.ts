// The one field-rule engine of every driver: the fields a driver reads of each frame type, checked once per frame, failures removed and reported.
import type { JsonObject } from '../../wire/index.js';
import { isKind, withArticle } from './json-kinds.js';
import type { JsonKind } from './json-kinds.js';
import type { FrameRejection } from './json-line.js';

/** What a driver expects of one field of a frame. */
export interface FieldRule {
  kind: JsonKind | 'any';
  /** It must be present: absent, the frame is unusable. */
  required?: boolean;
  /** null is accepted (and kept), as absent would be (serde's `None`, fuseraft's nullable counts). */
  nullable?: boolean;
  /** A string field: one of these values. */
  oneOf?: readonly string[];
  /** Present but wrong, the frame is unusable (a required field always is). */
  essential?: boolean;
}

/** A required field of `kind` (not null). */
export const required = (kind: FieldRule['kind'], extra: Omit<FieldRule, 'kind' | 'required'> = {}): FieldRule => ({ kind, required: true, ...extra });
/** An optional field of `kind`; null counts as absent. */
export const optional = (kind: FieldRule['kind'], extra: Omit<FieldRule, 'kind' | 'nullable'> = {}): FieldRule => ({ kind, nullable: true, ...extra });

/** The rules of one frame type (or of a nested object), by field name. */
export type FieldTable = Readonly<Record<string, FieldRule>>;

/** The result of checking a frame: the failed fields' messages (undefined: none), and whether the frame keeps its meaning. */
export interface FieldCheck {
  errors: string[] | undefined;
  usable: boolean;
}

/** One rule with its field name and its message prefix. */
interface CompiledRule extends FieldRule {
  name: string;
  label: string;
}

/** A table compiled once: checking a frame walks an array and allocates nothing when every field passes. */
export type CompiledTable = readonly CompiledRule[];

/** Compiles `table`; `path` prefixes each field in the messages (`turn_done.`, `message.`, `''`). */
export function compileTable(table: FieldTable, path = ''): CompiledTable {
  return Object.entries(table).map(([name, rule]) => ({ name, label: `${path}${name}`, ...rule }));
}

/**
 * Checks `target`'s fields against `rules`. A field that fails is deleted from `target` (code that reads a
 * checked frame never sees a wrong type) and its message added to `check.errors`: `X is missing`,
 * `X must be a string`, `X must be one of a, b`. A failed required or essential field makes it unusable.
 * `check` accumulates across calls (a frame and its nested objects).
 */
export function checkTable(target: JsonObject, rules: CompiledTable | undefined, check: FieldCheck = { errors: undefined, usable: true }): FieldCheck {
  if (rules === undefined) return check;
  for (const rule of rules) {
    const value = target[rule.name];
    if (value === undefined || (value === null && rule.nullable === true)) {
      if (rule.required !== true) continue;
      (check.errors ??= []).push(`${rule.label} is missing`);
      check.usable = false;
      continue;
    }
    if (fits(value, rule)) continue;
    (check.errors ??= []).push(`${rule.label} must be ${rule.oneOf === undefined ? withArticle(rule.kind) : `one of ${rule.oneOf.join(', ')}`}`);
    delete target[rule.name];
    if (rule.required === true || rule.essential === true) check.usable = false;
  }
  return check;
}

function fits(value: unknown, rule: FieldRule): boolean {
  if (rule.kind === 'any') return true;
  return isKind(value, rule.kind) && (rule.oneOf === undefined || rule.oneOf.includes(value as string));
}

/**
 * The tables of every frame type a driver reads, compiled once. `pathOf` gives the prefix of a type's
 * messages (default none).
 */
export class FieldRules {
  readonly #tables: ReadonlyMap<string, CompiledTable>;

  constructor(tables: Readonly<Record<string, FieldTable>>, pathOf: (type: string) => string = () => '') {
    this.#tables = new Map(Object.entries(tables).map(([type, table]) => [type, compileTable(table, pathOf(type))]));
  }

  /** Whether `type` has rules (the frame types the driver interprets). */
  has(type: string): boolean {
    return this.#tables.has(type);
  }

  /** Checks `target` as a frame of `type` (see {@link checkTable}); a type without rules passes. */
  check(target: JsonObject, type: string, check?: FieldCheck): FieldCheck {
    return checkTable(target, this.#tables.get(type), check);
  }
}

/** The `invalid-payload` rejection of a frame whose fields failed: `<where> (<type>): <each error>`. */
export function fieldRejection(where: string, type: string, errors: string[]): FrameRejection {
  return { code: 'invalid-payload', reason: `${where} (${type}): ${errors.join('; ')}`, lineType: type, errors };
}
