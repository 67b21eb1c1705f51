// outputSchema's check: compiling a caller's schema (or refusing it), reading the answer's JSON, validating it, and the contract's repair and verdict.
import { describe, expect, it } from 'vitest';
import { OutputContract, outputInstructions, repairPrompt } from '../../../src/run/output-contract.js';
import { compileOutputSchema, parseAnswer } from '../../../src/run/output-schema.js';

const PERSON = { type: 'object', properties: { name: { type: 'string' }, age: { type: 'integer', minimum: 0 } }, required: ['name', 'age'], additionalProperties: false };
const done = { status: 'done' as const, code: 'child-error' as const, error: '', fromChild: true };

describe('parseAnswer', () => {
  it('takes the whole text when it is JSON, else the last fenced JSON block', () => {
    expect(parseAnswer(' {"a": 1}\n')).toEqual({ ok: true, value: { a: 1 } });
    expect(parseAnswer('Here:\n```json\n{"a": 1}\n```\nand again\n```\n[2]\n```\n')).toEqual({ ok: true, value: [2] });
    expect(parseAnswer('Sure.\n```json\n{"a": 1}\n```')).toEqual({ ok: true, value: { a: 1 } });
    expect(parseAnswer('"just a string"')).toEqual({ ok: true, value: 'just a string' });
  });

  it('says why there is no JSON value', () => {
    expect(parseAnswer('no json here')).toMatchObject({ ok: false, reason: expect.stringMatching(/neither JSON nor holds a fenced JSON block/) });
    expect(parseAnswer('```json\n{oops}\n```')).toMatchObject({ ok: false, reason: expect.stringMatching(/its last fenced block is not JSON/) });
    expect(parseAnswer('')).toMatchObject({ ok: false });
  });
});

describe('compileOutputSchema', () => {
  it('validates into the value, or lists where and why (up to 20)', () => {
    const check = compileOutputSchema(PERSON);
    expect(check.check('{"name":"Ada","age":36}')).toEqual({ ok: true, data: { name: 'Ada', age: 36 } });
    const bad = check.check('```json\n{"age":-1,"extra":true}\n```');
    expect(bad).toEqual({
      ok: false,
      errors: [
        { path: '', message: "must have required property 'name'" },
        { path: '', message: 'must NOT have additional properties (extra)' },
        { path: '/age', message: 'must be >= 0' },
      ],
    });
    const many = compileOutputSchema({ type: 'array', items: { type: 'string' } }).check(JSON.stringify(Array.from({ length: 50 }, (_, i) => i)));
    expect(many.ok === false && many.errors.length).toBe(20);
    expect(check.check('not json')).toMatchObject({ ok: false, errors: [{ path: '', message: expect.stringMatching(/^the answer holds no JSON value/) }] });
  });

  it('compiles a schema object once, picks the draft by $schema, and knows the formats', () => {
    expect(compileOutputSchema(PERSON)).toBe(compileOutputSchema(PERSON));
    const tuple = compileOutputSchema({ $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'array', prefixItems: [{ type: 'number' }], items: false });
    expect(tuple.check('[1]').ok).toBe(true);
    expect(tuple.check('[1, 2]').ok).toBe(false);
    expect(compileOutputSchema({ type: 'string', format: 'date-time' }).check('"yesterday"').ok).toBe(false);
    expect(compileOutputSchema(true).check('{"any":1}').ok).toBe(true);
    expect(compileOutputSchema(false).check('1').ok).toBe(false);
  });

  it('refuses a schema it cannot compile with a TypeError, before anything starts', () => {
    expect(() => compileOutputSchema({ type: 'nope' })).toThrow(/options\.outputSchema cannot be compiled: schema is invalid/);
    expect(() => compileOutputSchema({ $ref: 'https://example.com/remote.json' })).toThrow(/can't resolve reference/);
    expect(() => compileOutputSchema({ $schema: 'http://json-schema.org/draft-04/schema#' })).toThrow(/not a draft subvisor validates/);
    const cycle: Record<string, unknown> = { type: 'object' };
    cycle['properties'] = { self: cycle };
    expect(() => compileOutputSchema(cycle)).toThrow(/is not JSON/);
    let deep: Record<string, unknown> = { type: 'object' };
    for (let i = 0; i < 70; i++) deep = { type: 'object', properties: { x: deep } };
    expect(() => compileOutputSchema(deep)).toThrow(/nests deeper than 64 levels/);
    expect(() => compileOutputSchema([] as never)).toThrow(/must be a JSON Schema/);
  });
});

describe('OutputContract', () => {
  it('one repair turn naming the errors, only for an invalid answer, and not after a budget stop', () => {
    const contract = new OutputContract(compileOutputSchema(PERSON), true);
    contract.turnAnswered('{"name":"Ada","age":36}');
    expect(contract.repairBeforeClose(false)).toBeUndefined();
    contract.turnAnswered('{"name":"Ada"}');
    expect(contract.repairBeforeClose(true)).toBeUndefined();
    expect(contract.repairBeforeClose(false)).toBe(repairPrompt([{ path: '', message: "must have required property 'age'" }]));
    expect(contract.repairBeforeClose(false)).toBeUndefined();
    expect(repairPrompt([{ path: '/age', message: 'must be >= 0' }])).toContain('- /age: must be >= 0');
  });

  it('no repair where the protocol cannot continue, or when the answer is not known before the end', () => {
    const cannot = new OutputContract(compileOutputSchema(PERSON), false);
    cannot.turnAnswered('{}');
    expect(cannot.repairBeforeClose(false)).toBeUndefined();
    const unknown = new OutputContract(compileOutputSchema(PERSON), true);
    unknown.turnAnswered(undefined);
    expect(unknown.repairBeforeClose(false)).toBeUndefined();
  });

  it('judges the final answer: data, or failed invalid-output with the errors; other endings untouched', () => {
    const contract = new OutputContract(compileOutputSchema(PERSON), true);
    expect(contract.judge(done, '{"name":"Ada","age":36}')).toEqual({ verdict: done, data: { name: 'Ada', age: 36 } });
    const invalid = contract.judge(done, '{"name":1,"age":36}');
    expect(invalid).toEqual({
      verdict: { status: 'failed', code: 'invalid-output', error: 'the answer does not match outputSchema: /name: must be string', fromChild: false },
      errors: [{ path: '/name', message: 'must be string' }],
    });
    expect(contract.judge(done, undefined).verdict.error).toMatch(/the run ended without an answer/);
    const cancelled = { status: 'cancelled' as const, code: 'aborted' as const, error: 'x', fromChild: false };
    expect(contract.judge(cancelled, 'whatever')).toEqual({ verdict: cancelled });
  });

  it('the instructions show the schema inside a json fence', () => {
    expect(outputInstructions({ type: 'number' })).toBe(
      'Give your final answer as one JSON value that matches the JSON Schema below, in a fenced code block marked json;\ntext outside that block is ignored.\n```json\n{\n  "type": "number"\n}\n```',
    );
  });
});
