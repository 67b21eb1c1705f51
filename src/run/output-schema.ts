// outputSchema's check: the schema compiled once (ajv, by its $schema draft), the answer parsed (the whole text or a fenced JSON block) and validated.
import { createRequire } from 'node:module';
import type { Ajv, ErrorObject, Options, ValidateFunction } from 'ajv';
import type { Ajv2019 } from 'ajv/dist/2019.js';
import type { Ajv2020 } from 'ajv/dist/2020.js';
import type { FormatsPlugin } from 'ajv-formats';
import type { OutputError } from '../protocol/outcome.js';
import type { JsonSchema } from '../protocol/resolved-options.js';

/** At most this many errors are kept (in the outcome and the repair turn). */
export const MAX_OUTPUT_ERRORS = 20;
/** A larger schema (as JSON) is refused: ajv compiles schemas to code, and a huge one can take very long. */
const MAX_SCHEMA_CHARS = 1024 * 1024;
/** A deeper schema is refused: compiling one that deep can overflow the stack. */
const MAX_SCHEMA_DEPTH = 64;

/** The answer checked: the value when it is valid, else why not. */
export type OutputVerdict = { ok: true; data: unknown } | { ok: false; errors: OutputError[] };

/** A compiled schema. */
export interface OutputCheck {
  check(answer: string): OutputVerdict;
}

type Draft = 'draft-07' | '2019-09' | '2020-12';

/**
 * ajv and ajv-formats (CommonJS) are loaded on the first schema compiled, synchronously (a bad schema must
 * throw where the options are checked): a program that never gives an `outputSchema` does not pay for
 * them when it imports subvisor.
 */
const loadLazily = createRequire(import.meta.url);

/** An ajv class of one draft, as its module exports it. */
type AjvClass = new (options: Options) => Ajv | Ajv2019 | Ajv2020;

function makeAjv(draft: Draft, options: Options): Ajv {
  const module = draft === '2020-12' ? 'ajv/dist/2020.js' : draft === '2019-09' ? 'ajv/dist/2019.js' : 'ajv';
  const exported = loadLazily(module) as { default: AjvClass };
  const ajv = new exported.default(options) as Ajv;
  (loadLazily('ajv-formats') as { default: FormatsPlugin }).default(ajv);
  return ajv;
}

/** One ajv per draft, made on first use: every format of ajv-formats, all errors, unknown keywords ignored (as JSON Schema says). */
const validators = new Map<Draft, Ajv>();
/** Compiled schemas by schema object: a pool's runs share one compilation. */
const compiled = new WeakMap<object, OutputCheck>();

/**
 * Compiles `schema` (cached per schema object). Throws a TypeError naming `where` when it is not a
 * schema ajv can compile: not JSON, too large or deep, an unknown `$schema`, an invalid keyword value, a
 * `$ref` it cannot resolve (nothing is fetched).
 */
export function compileOutputSchema(schema: JsonSchema, where = 'options.outputSchema'): OutputCheck {
  if (typeof schema === 'boolean') return { check: (answer) => checkValue(answer, () => schema, () => [{ path: '', message: 'the schema is false: no value is valid' }]) };
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) throw new TypeError(`${where} must be a JSON Schema (an object or a boolean)`);
  const cached = compiled.get(schema);
  if (cached !== undefined) return cached;
  refuseOversized(schema, where);
  let validate: ValidateFunction;
  try {
    validate = validatorFor(draftOf(schema, where)).compile(schema);
  } catch (error) {
    throw new TypeError(`${where} cannot be compiled: ${(error as Error).message}`);
  }
  const check: OutputCheck = { check: (answer) => checkValue(answer, (value) => validate(value), () => errorsOf(validate.errors)) };
  compiled.set(schema, check);
  return check;
}

/**
 * The JSON value of an answer: the whole text when it is JSON, else the last fenced code block marked
 * `json` (or unmarked) that is.
 */
export function parseAnswer(answer: string): { ok: true; value: unknown } | { ok: false; reason: string } {
  const whole = tryParse(answer.trim());
  if (whole.ok) return whole;
  const blocks = [...answer.matchAll(/^[ \t]*```[ \t]*(json|jsonc|JSON)?[ \t]*\r?\n([\s\S]*?)\r?\n[ \t]*```[ \t]*$/gm)];
  let reason = whole.reason;
  for (let index = blocks.length - 1; index >= 0; index--) {
    const block = tryParse(blocks[index]![2]!.trim());
    if (block.ok) return block;
    reason = `its last fenced block is not JSON: ${block.reason}`;
  }
  return { ok: false, reason: blocks.length === 0 ? `it is neither JSON nor holds a fenced JSON block (${reason})` : reason };
}

function checkValue(answer: string, valid: (value: unknown) => boolean, errors: () => OutputError[]): OutputVerdict {
  const parsed = parseAnswer(answer);
  if (!parsed.ok) return { ok: false, errors: [{ path: '', message: `the answer holds no JSON value: ${parsed.reason}` }] };
  return valid(parsed.value) ? { ok: true, data: parsed.value } : { ok: false, errors: errors() };
}

function tryParse(text: string): { ok: true; value: unknown } | { ok: false; reason: string } {
  if (text === '') return { ok: false, reason: 'it is empty' };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (error) {
    return { ok: false, reason: (error as Error).message };
  }
}

/** ajv's errors as the outcome gives them: where in the value, and what is wrong (naming the offending property). */
function errorsOf(errors: ErrorObject[] | null | undefined): OutputError[] {
  return (errors ?? []).slice(0, MAX_OUTPUT_ERRORS).map((error) => {
    const params = error.params as Record<string, unknown>;
    // What would have been right, where ajv knows it: the unexpected property, the allowed values.
    const allowed = Array.isArray(params['allowedValues']) ? params['allowedValues'] : 'allowedValue' in params ? [params['allowedValue']] : undefined;
    const extra = typeof params['additionalProperty'] === 'string'
      ? ` (${params['additionalProperty']})`
      : allowed === undefined ? '' : `: ${allowed.map((value) => JSON.stringify(value)).join(', ')}`;
    return { path: error.instancePath, message: `${error.message ?? error.keyword}${extra}` };
  });
}

function draftOf(schema: { readonly [keyword: string]: unknown }, where: string): Draft {
  const uri = schema['$schema'];
  if (uri === undefined) return 'draft-07';
  if (typeof uri !== 'string') throw new TypeError(`${where}.$schema must be a string`);
  if (uri.includes('2020-12')) return '2020-12';
  if (uri.includes('2019-09')) return '2019-09';
  if (uri.includes('draft-07')) return 'draft-07';
  throw new TypeError(`${where}.$schema ${JSON.stringify(uri)} is not a draft subvisor validates: draft-07 (the default), 2019-09 or 2020-12`);
}

function validatorFor(draft: Draft): Ajv {
  let ajv = validators.get(draft);
  if (ajv === undefined) {
    ajv = makeAjv(draft, { allErrors: true, strict: false });
    validators.set(draft, ajv);
  }
  return ajv;
}

/** A schema that is not JSON (a cycle, a function), or too large or deep to compile safely, is refused before ajv sees it. */
function refuseOversized(schema: object, where: string): void {
  let text: string | undefined;
  try {
    text = JSON.stringify(schema, (_key, value: unknown) => {
      if (typeof value === 'function' || typeof value === 'symbol' || typeof value === 'bigint') throw new TypeError(`a ${typeof value} is not JSON`);
      return value;
    });
  } catch (error) {
    throw new TypeError(`${where} is not JSON: ${(error as Error).message}`);
  }
  if (text === undefined || text.length > MAX_SCHEMA_CHARS) throw new TypeError(`${where} is larger than ${MAX_SCHEMA_CHARS} characters of JSON`);
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let index = 0; index < text.length; index++) {
    const char = text[index];
    if (inString) {
      if (char === '\\') index++;
      else if (char === '"') inString = false;
    } else if (char === '"') inString = true;
    else if (char === '{' || char === '[') deepest = Math.max(deepest, ++depth);
    else if (char === '}' || char === ']') depth--;
  }
  if (deepest > MAX_SCHEMA_DEPTH) throw new TypeError(`${where} nests deeper than ${MAX_SCHEMA_DEPTH} levels`);
}
