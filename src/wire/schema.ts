// Field schemas of every wire message type, and the hand-written validator that checks a payload against them.
import type { Direction } from './types.js';

type Check = (value: unknown) => boolean;

interface FieldSpec {
  readonly key: string;
  readonly required: boolean;
  readonly check: Check;
  /** What the value must be, for the error message. */
  readonly expected: string;
}

interface TypeSpec {
  readonly fields: readonly FieldSpec[];
  /** Extra rule across fields (control-ack's `ref`), returning an error or undefined. */
  readonly rule?: (message: Record<string, unknown>) => string | undefined;
}

const isString: Check = (value) => typeof value === 'string';
const isBoolean: Check = (value) => typeof value === 'boolean';
const isInteger: Check = (value) => Number.isInteger(value);
const isPositiveInteger: Check = (value) => Number.isInteger(value) && (value as number) >= 1;
const isFiniteNumber: Check = (value) => typeof value === 'number' && Number.isFinite(value);
const isObject: Check = (value) => typeof value === 'object' && value !== null && !Array.isArray(value);
const isJson: Check = () => true;
const isPositiveIntegerArray: Check = (value) => Array.isArray(value) && value.every(isPositiveInteger);
const oneOf = (...allowed: string[]): Check => {
  const set = new Set(allowed);
  return (value) => typeof value === 'string' && set.has(value);
};

const req = (key: string, check: Check, expected: string): FieldSpec => ({ key, required: true, check, expected });
const opt = (key: string, check: Check, expected: string): FieldSpec => ({ key, required: false, check, expected });

const STRING = 'a string';
const BOOLEAN = 'a boolean';
const POSITIVE_INTEGER = 'a positive integer';

const DISPLAY_FIELDS: readonly FieldSpec[] = [
  opt('timestamp', isString, STRING),
  opt('summary', isString, STRING),
  opt('transport-truncated?', isBoolean, BOOLEAN),
  opt('run-id', isString, STRING),
  opt('agent', isString, STRING),
  opt('requested-cwd', isString, STRING),
  opt('cwd', isString, STRING),
  opt('physical-cwd', isString, STRING),
];

const display = (...fields: FieldSpec[]): TypeSpec => ({ fields: [...fields, ...DISPLAY_FIELDS] });
const lifecycle = (...fields: FieldSpec[]): TypeSpec => ({ fields });

const textBlock = display(
  req('final?', isBoolean, BOOLEAN),
  opt('content-index', isInteger, 'an integer'),
  opt('text', isString, STRING),
);
const textDelta = display(opt('content-index', isInteger, 'an integer'), opt('delta', isString, STRING));
const injected = display(opt('text', isString, STRING), opt('ref', isPositiveInteger, POSITIVE_INTEGER));
const usage = opt('usage', isObject, 'an object');

export const EVENT_SCHEMAS: ReadonlyMap<string, TypeSpec> = new Map<string, TypeSpec>([
  ['agent-started', display(opt('provider', isString, STRING), opt('model', isString, STRING))],
  ['user', display(opt('text', isString, STRING))],
  ['llm-start', display(opt('provider', isString, STRING), opt('model', isString, STRING))],
  ['llm-end', display(opt('stop-reason', isString, STRING), usage)],
  ['assistant-text', textBlock],
  ['assistant-text-delta', textDelta],
  ['assistant-thinking', textBlock],
  ['assistant-thinking-delta', textDelta],
  ['assistant-stream-end', display(req('final?', isBoolean, BOOLEAN))],
  ['tool-call', display(req('name', isString, STRING), opt('id', isString, STRING), opt('arguments', isJson, 'JSON'))],
  [
    'tool-result',
    display(
      req('name', isString, STRING),
      req('is-error?', isBoolean, BOOLEAN),
      opt('id', isString, STRING),
      opt('tool-call-id', isString, STRING),
      opt('duration-seconds', isFiniteNumber, 'a number'),
      opt('result', isJson, 'JSON'),
    ),
  ],
  ['steering-injected', injected],
  ['follow-up-injected', injected],
  ['agent-turn-complete', display(opt('status', isString, STRING), opt('error', isString, STRING))],
  ['error', display(opt('error', isString, STRING), opt('source', isString, STRING))],
  ['info', display(opt('refs', isPositiveIntegerArray, 'an array of positive integers'))],
  ['ready', lifecycle()],
  ['turn-started', lifecycle(req('turn', isPositiveInteger, POSITIVE_INTEGER))],
  [
    'turn-complete',
    lifecycle(req('turn', isPositiveInteger, POSITIVE_INTEGER), req('stop-reason', isString, STRING), usage),
  ],
  [
    'control-ack',
    {
      fields: [
        req('status', oneOf('accepted', 'rejected', 'applied'), 'accepted, rejected or applied'),
        opt('ref', isPositiveInteger, POSITIVE_INTEGER),
        opt('reason', isString, STRING),
      ],
      rule: (message) =>
        message['ref'] === undefined && message['status'] !== 'rejected' && typeof message['status'] === 'string'
          ? 'ref is required unless status is rejected'
          : undefined,
    },
  ],
  [
    'result',
    lifecycle(
      req('stop-reason', isString, STRING),
      opt('final-text', isString, STRING),
      usage,
      opt('truncated?', isBoolean, BOOLEAN),
      opt('final-text-path', isString, STRING),
      opt('context', oneOf('complete', 'partial'), 'complete or partial'),
    ),
  ],
  [
    'exit',
    lifecycle(
      req('status', oneOf('done', 'cancelled', 'failed', 'timed-out'), 'done, cancelled, failed or timed-out'),
      opt('error', isString, STRING),
    ),
  ],
]);

export const CONTROL_SCHEMAS: ReadonlyMap<string, TypeSpec> = new Map<string, TypeSpec>([
  ['prompt', lifecycle(req('text', isString, STRING))],
  ['steer', lifecycle(req('text', isString, STRING))],
  ['follow-up', lifecycle(req('text', isString, STRING))],
  ['finalize', lifecycle(opt('note', isString, STRING))],
  ['cancel', lifecycle()],
  ['close', lifecycle()],
]);

export const SCHEMAS: Readonly<Record<Direction, ReadonlyMap<string, TypeSpec>>> = {
  event: EVENT_SCHEMAS,
  control: CONTROL_SCHEMAS,
};

/**
 * Checks a message's payload fields against its type's schema. Returns undefined when valid (the hot
 * path allocates nothing), else one error per failed field. Unknown extra fields are accepted; a known
 * optional field must be omitted rather than null.
 */
export function payloadErrors(spec: TypeSpec, message: Record<string, unknown>): string[] | undefined {
  let errors: string[] | undefined;
  const fields = spec.fields;
  for (let i = 0; i < fields.length; i++) {
    const field = fields[i]!;
    const value = message[field.key];
    if (value === undefined) {
      if (field.required) (errors ??= []).push(`${field.key} is required`);
    } else if (value === null) {
      (errors ??= []).push(`${field.key} must be omitted rather than null`);
    } else if (!field.check(value)) {
      (errors ??= []).push(`${field.key} must be ${field.expected}`);
    }
  }
  const ruleError = spec.rule?.(message);
  if (ruleError !== undefined) (errors ??= []).push(ruleError);
  return errors;
}
