// Reading a scenario that is not built in, for every fake program: inline JSON in the environment, or a file.
import { readFileSync } from 'node:fs';
import { CHILD_ENV } from '../child-env.js';

/**
 * The JSON object a scenario reference names: `env` reads $SUBVISOR_FAKE_SCENARIO, a path (with a `/` or
 * ending in `.json`) reads that file. Anything else, unreadable or not a JSON object fails with `fail(message)`.
 */
export function loadScenarioObject(reference: string, fail: (message: string) => Error): Record<string, unknown> {
  let json: string;
  if (reference === 'env') {
    const inline = process.env[CHILD_ENV.scenario];
    if (inline === undefined) throw fail(`scenario "env" needs $${CHILD_ENV.scenario}`);
    json = inline;
  } else if (reference.includes('/') || reference.endsWith('.json')) {
    try {
      json = readFileSync(reference, 'utf8');
    } catch (error) {
      throw fail(`cannot read scenario file ${reference}: ${(error as Error).message}`);
    }
  } else {
    throw fail(`unknown scenario "${reference}"`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch (error) {
    throw fail(`scenario is not JSON: ${(error as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw fail('a scenario must be a JSON object');
  return parsed as Record<string, unknown>;
}

/** The scenario's `name` when it has a string one, else `custom`. */
export function scenarioLabel(scenario: { name?: unknown }): string {
  return typeof scenario.name === 'string' ? scenario.name : 'custom';
}

export const isJsonObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
