// --output-schema FILE: the JSON Schema read, parsed and compiled before anything starts (a usage error otherwise), and the answer it makes of an outcome.
import { readFile } from 'node:fs/promises';
import type { JsonSchema, Outcome } from '../api/types.js';
import { compileOutputSchema } from '../run/output-schema.js';
import { UsageError } from './usage-error.js';

/** A schema file larger than this is refused before it is parsed (the core refuses one over 1 MiB of JSON anyway). */
const MAX_SCHEMA_FILE_BYTES = 4 * 1024 * 1024;

/** Reads and checks the schema of `--output-schema`: unreadable, not JSON, or not a schema ajv compiles is a usage error. */
export async function readOutputSchema(path: string): Promise<JsonSchema> {
  let text: string;
  try {
    const bytes = await readFile(path);
    if (bytes.length > MAX_SCHEMA_FILE_BYTES) throw new UsageError(`--output-schema ${path} is larger than ${MAX_SCHEMA_FILE_BYTES} bytes.`);
    text = bytes.toString('utf8');
  } catch (error) {
    if (error instanceof UsageError) throw error;
    throw new UsageError(`--output-schema ${path}: cannot read it (${(error as NodeJS.ErrnoException).code ?? String(error)}).`);
  }
  let schema: unknown;
  try {
    schema = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`--output-schema ${path} is not JSON: ${(error as Error).message}.`);
  }
  try {
    compileOutputSchema(schema as JsonSchema, `--output-schema ${path}`);
  } catch (error) {
    throw new UsageError(`${(error as Error).message}.`);
  }
  return schema as JsonSchema;
}

/**
 * What `--output text` prints of a run with an output schema: the validated value as one line of JSON,
 * or nothing when the answer did not match (the error is on stderr).
 */
export function dataAsAnswer(outcome: Outcome): { finalText?: string } {
  return outcome.data === undefined ? {} : { finalText: `${JSON.stringify(outcome.data)}\n` };
}
