// Field schemas of every wire message type, and the payload checkers compiled from them.
import { MAX_SEQ, WIRE_VERSION } from './constants.js';
import type { WireControlType, WireEventType } from './types.js';

/** The JSON type a field must have. */
type Kind =
  | 'string'
  | 'boolean'
  | 'integer'
  | 'positive-integer'
  | 'number'
  | 'object'
  | 'json'
  | 'positive-integer-array'
  | { readonly oneOf: readonly string[] };

export interface FieldSpec {
  readonly key: string;
  readonly required: boolean;
  readonly kind: Kind;
  /** What the value must be, for the error message. */
  readonly expected: string;
}

/** A message type's payload schema and its compiled checker. */
export interface TypeSpec {
  readonly fields: readonly FieldSpec[];
  /** control-ack only: `ref` may be omitted only when `status` is `rejected`. */
  readonly refUnlessRejected: boolean;
  /** Returns undefined when the payload is valid, else one error per failed field. */
  readonly errors: (message: Record<string, unknown>) => string[] | undefined;
  /**
   * The decode fast path: true only when the whole message (v, seq, run and payload) is valid. On false
   * the caller runs the ordered checks to find the right rejection.
   */
  readonly accepts: (message: Record<string, unknown>) => boolean;
}

/** Whether a value is an array of integers in 1..2^53-1 (info's `refs`). */
function isPositiveIntegerArray(value: unknown): boolean {
  if (!Array.isArray(value)) return false;
  for (let i = 0; i < value.length; i++) {
    const item: unknown = value[i];
    if (!Number.isInteger(item) || (item as number) < 1 || (item as number) > MAX_SEQ) return false;
  }
  return true;
}

/** A JavaScript expression testing the local `x` (never null or undefined here) against a kind. */
function test(kind: Kind): string {
  if (typeof kind === 'object') return kind.oneOf.map((choice) => `x === ${JSON.stringify(choice)}`).join(' || ');
  switch (kind) {
    case 'string':
      return 'typeof x === "string"';
    case 'boolean':
      return 'typeof x === "boolean"';
    case 'integer':
      return 'Number.isInteger(x)';
    case 'positive-integer':
      return `Number.isInteger(x) && x >= 1 && x <= ${MAX_SEQ}`;
    case 'number':
      return 'typeof x === "number" && Number.isFinite(x)';
    case 'object':
      return 'typeof x === "object" && !Array.isArray(x)';
    case 'json':
      return 'true';
    case 'positive-integer-array':
      return 'isPositiveIntegerArray(x)';
  }
}

/**
 * Compiles a payload checker with every key written out as a constant, so each property read gets its
 * own inline cache: a generic loop over keys costs about a quarter of the decode rate on small lines.
 * The source is built only from this module's own schema table (keys and messages go through
 * JSON.stringify), never from input.
 */
function compile(fields: readonly FieldSpec[], refUnlessRejected: boolean): TypeSpec['errors'] {
  const lines = ['let e, x;'];
  for (const field of fields) {
    const key = JSON.stringify(field.key);
    lines.push(`x = m[${key}];`);
    const missing = field.required ? `(e ??= []).push(${JSON.stringify(`${field.key} is required`)});` : '';
    lines.push(`if (x === undefined) { ${missing} }`);
    // An optional field is omitted, never null; only an any-JSON field can hold null as its value.
    if (field.kind !== 'json') {
      const nullError = JSON.stringify(`${field.key} must be omitted rather than null`);
      lines.push(`else if (x === null) (e ??= []).push(${nullError});`);
    }
    lines.push(
      `else if (!(${test(field.kind)})) (e ??= []).push(${JSON.stringify(`${field.key} must be ${field.expected}`)});`,
    );
  }
  if (refUnlessRejected) {
    lines.push(
      'if (m["ref"] === undefined && typeof m["status"] === "string" && m["status"] !== "rejected")',
      '  (e ??= []).push("ref is required unless status is rejected");',
    );
  }
  lines.push('return e;');
  const factory = new Function('isPositiveIntegerArray', `return function payloadErrors(m) {\n${lines.join('\n')}\n};`);
  return factory(isPositiveIntegerArray) as TypeSpec['errors'];
}

/** Compiles the all-or-nothing check of a whole message of one type, envelope included (see `compile`). */
function compileAccepts(fields: readonly FieldSpec[], refUnlessRejected: boolean): TypeSpec['accepts'] {
  const lines = [
    `if (m.v !== ${WIRE_VERSION}) return false;`,
    'let x = m.seq;',
    `if (typeof x !== "number" || !Number.isInteger(x) || x < 1 || x > ${MAX_SEQ}) return false;`,
    'if (typeof m.run !== "string") return false;',
  ];
  for (const field of fields) {
    if (field.kind === 'json' && !field.required) continue;
    lines.push(`x = m[${JSON.stringify(field.key)}];`);
    const present = field.kind === 'json' ? 'x !== undefined' : 'x !== undefined && x !== null';
    lines.push(
      field.required
        ? `if (!(${present}) || !(${test(field.kind)})) return false;`
        : `if (x !== undefined && (x === null || !(${test(field.kind)}))) return false;`,
    );
  }
  if (refUnlessRejected) lines.push('if (m["ref"] === undefined && m["status"] !== "rejected") return false;');
  lines.push('return true;');
  const factory = new Function('isPositiveIntegerArray', `return function accepts(m) {\n${lines.join('\n')}\n};`);
  return factory(isPositiveIntegerArray) as TypeSpec['accepts'];
}

/** Whether a value (never null or undefined here) passes a kind's check: the interpreted twin of `test`. */
function passes(kind: Kind, x: unknown): boolean {
  if (typeof kind === 'object') return typeof x === 'string' && kind.oneOf.includes(x);
  switch (kind) {
    case 'string':
      return typeof x === 'string';
    case 'boolean':
      return typeof x === 'boolean';
    case 'integer':
      return Number.isInteger(x);
    case 'positive-integer':
      return Number.isInteger(x) && (x as number) >= 1 && (x as number) <= MAX_SEQ;
    case 'number':
      return typeof x === 'number' && Number.isFinite(x);
    case 'object':
      return typeof x === 'object' && !Array.isArray(x);
    case 'json':
      return true;
    case 'positive-integer-array':
      return isPositiveIntegerArray(x);
  }
}

/**
 * The same two checkers as plain closures, for runtimes that forbid code generation from strings
 * (`node --disallow-code-generation-from-strings`): slower, identical verdicts.
 */
export function interpretedCheckers(
  fields: readonly FieldSpec[],
  refUnlessRejected: boolean,
): Pick<TypeSpec, 'errors' | 'accepts'> {
  const refMissing = (m: Record<string, unknown>) =>
    refUnlessRejected && m['ref'] === undefined && typeof m['status'] === 'string' && m['status'] !== 'rejected';
  return {
    errors(m) {
      let errors: string[] | undefined;
      for (const field of fields) {
        const x = m[field.key];
        if (x === undefined) {
          if (field.required) (errors ??= []).push(`${field.key} is required`);
        } else if (x === null && field.kind !== 'json') {
          (errors ??= []).push(`${field.key} must be omitted rather than null`);
        } else if (!passes(field.kind, x)) {
          (errors ??= []).push(`${field.key} must be ${field.expected}`);
        }
      }
      if (refMissing(m)) (errors ??= []).push('ref is required unless status is rejected');
      return errors;
    },
    accepts(m) {
      const seq = m['seq'];
      if (m['v'] !== WIRE_VERSION || typeof m['run'] !== 'string') return false;
      if (typeof seq !== 'number' || !Number.isInteger(seq) || seq < 1 || seq > MAX_SEQ) return false;
      for (const field of fields) {
        const x = m[field.key];
        if (x === undefined) {
          if (field.required) return false;
        } else if ((x === null && field.kind !== 'json') || !passes(field.kind, x)) {
          return false;
        }
      }
      return !refMissing(m);
    },
  };
}

function spec(fields: readonly FieldSpec[], refUnlessRejected = false): TypeSpec {
  let checkers: Pick<TypeSpec, 'errors' | 'accepts'>;
  try {
    checkers = { errors: compile(fields, refUnlessRejected), accepts: compileAccepts(fields, refUnlessRejected) };
  } catch {
    // Code generation from strings is disabled in this runtime: interpret the same schema instead.
    checkers = interpretedCheckers(fields, refUnlessRejected);
  }
  return { fields, refUnlessRejected, ...checkers };
}

const req = (key: string, kind: Kind, expected: string): FieldSpec => ({ key, required: true, kind, expected });
const opt = (key: string, kind: Kind, expected: string): FieldSpec => ({ key, required: false, kind, expected });

const STRING = 'a string';
const BOOLEAN = 'a boolean';
const POSITIVE_INTEGER = 'a positive integer';

const DISPLAY_FIELDS: readonly FieldSpec[] = [
  opt('timestamp', 'string', STRING),
  opt('summary', 'string', STRING),
  opt('transport-truncated?', 'boolean', BOOLEAN),
  opt('run-id', 'string', STRING),
  opt('agent', 'string', STRING),
  opt('requested-cwd', 'string', STRING),
  opt('cwd', 'string', STRING),
  opt('physical-cwd', 'string', STRING),
];

const display = (...fields: FieldSpec[]): TypeSpec => spec([...fields, ...DISPLAY_FIELDS]);
const lifecycle = (...fields: FieldSpec[]): TypeSpec => spec(fields);
const oneOf = (...choices: string[]): Kind => ({ oneOf: choices });

const textBlock = display(
  req('final?', 'boolean', BOOLEAN),
  opt('content-index', 'integer', 'an integer'),
  opt('text', 'string', STRING),
);
const textDelta = display(opt('content-index', 'integer', 'an integer'), opt('delta', 'string', STRING));
const injected = display(opt('text', 'string', STRING), opt('ref', 'positive-integer', POSITIVE_INTEGER));
const usage = opt('usage', 'object', 'an object');

export const EVENT_SCHEMAS: ReadonlyMap<string, TypeSpec> = new Map<string, TypeSpec>([
  ['agent-started', display(opt('provider', 'string', STRING), opt('model', 'string', STRING))],
  ['user', display(opt('text', 'string', STRING))],
  ['llm-start', display(opt('provider', 'string', STRING), opt('model', 'string', STRING))],
  ['llm-end', display(opt('stop-reason', 'string', STRING), usage)],
  ['assistant-text', textBlock],
  ['assistant-text-delta', textDelta],
  ['assistant-thinking', textBlock],
  ['assistant-thinking-delta', textDelta],
  ['assistant-stream-end', display(req('final?', 'boolean', BOOLEAN))],
  ['tool-call', display(req('name', 'string', STRING), opt('id', 'string', STRING), opt('arguments', 'json', 'JSON'))],
  [
    'tool-result',
    display(
      req('name', 'string', STRING),
      req('is-error?', 'boolean', BOOLEAN),
      opt('id', 'string', STRING),
      opt('tool-call-id', 'string', STRING),
      opt('duration-seconds', 'number', 'a number'),
      opt('result', 'json', 'JSON'),
    ),
  ],
  ['steering-injected', injected],
  ['follow-up-injected', injected],
  ['agent-turn-complete', display(opt('status', 'string', STRING), opt('error', 'string', STRING))],
  ['error', display(opt('error', 'string', STRING), opt('source', 'string', STRING))],
  ['info', display(opt('refs', 'positive-integer-array', 'an array of positive integers'))],
  ['ready', lifecycle()],
  ['turn-started', lifecycle(req('turn', 'positive-integer', POSITIVE_INTEGER))],
  [
    'turn-complete',
    lifecycle(req('turn', 'positive-integer', POSITIVE_INTEGER), req('stop-reason', 'string', STRING), usage),
  ],
  [
    'control-ack',
    spec(
      [
        req('status', oneOf('accepted', 'rejected', 'applied'), 'accepted, rejected or applied'),
        opt('ref', 'positive-integer', POSITIVE_INTEGER),
        opt('reason', 'string', STRING),
      ],
      true,
    ),
  ],
  [
    'result',
    lifecycle(
      req('stop-reason', 'string', STRING),
      opt('final-text', 'string', STRING),
      usage,
      opt('truncated?', 'boolean', BOOLEAN),
      opt('final-text-path', 'string', STRING),
      opt('context', oneOf('complete', 'partial'), 'complete or partial'),
    ),
  ],
  [
    'exit',
    lifecycle(
      req('status', oneOf('done', 'cancelled', 'failed', 'timed-out'), 'done, cancelled, failed or timed-out'),
      opt('error', 'string', STRING),
    ),
  ],
]);

export const CONTROL_SCHEMAS: ReadonlyMap<string, TypeSpec> = new Map<string, TypeSpec>([
  ['prompt', lifecycle(req('text', 'string', STRING))],
  ['steer', lifecycle(req('text', 'string', STRING))],
  ['follow-up', lifecycle(req('text', 'string', STRING))],
  ['finalize', lifecycle(opt('note', 'string', STRING))],
  ['cancel', lifecycle()],
  ['close', lifecycle()],
]);

/** Every child -> parent message type. */
export const WIRE_EVENT_TYPES: readonly WireEventType[] = [...EVENT_SCHEMAS.keys()] as WireEventType[];

/** Every parent -> child message type. */
export const WIRE_CONTROL_TYPES: readonly WireControlType[] = [...CONTROL_SCHEMAS.keys()] as WireControlType[];
