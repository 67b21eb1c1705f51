// Parses one line of a --tasks file: plain text (the task as written), a JSON string (the task) or an object
// { id, task, env, timeout }.
import { parseTimeout } from './duration.js';

/** One task of a batch, checked. */
export interface BatchTask {
  /** The `id` from the line (a string or a number), or the line number when it had none. */
  id: string | number;
  task: string;
  /** Extra environment of this task's child, merged over `--env`. */
  env: Record<string, string>;
  /** Its own deadline, overriding `--timeout` (Infinity: none). */
  timeoutMs?: number;
}

export type TaskLineResult =
  | { kind: 'task'; task: BatchTask }
  | { kind: 'skip' }
  | { kind: 'invalid'; reason: string; id?: string | number };

const KNOWN_FIELDS = new Set(['id', 'task', 'env', 'timeout']);

/**
 * Checks one line (its 1-based number is the default id). Blank lines are skipped. A line whose first non-blank
 * character is `{` or `"` is JSON (an object, or a string when the task needs escapes); any other line is the task
 * itself, as written (trimmed), so a plain file of one task per line works. A JSON line that does not parse is
 * `invalid`, naming its line: it was meant as JSON, and running it as text would hand the child a broken object.
 */
export function parseTaskLine(text: string, lineNumber: number): TaskLineResult {
  const line = (text.endsWith('\r') ? text.slice(0, -1) : text).trim();
  if (line === '') return { kind: 'skip' };
  if (!line.startsWith('{') && !line.startsWith('"')) return checkedTask({ task: line }, lineNumber);
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    // JSON.parse's message quotes the line, which may hold an env value that is a secret: the line number says where.
    return {
      kind: 'invalid',
      reason: `line ${lineNumber} starts with ${line[0]} but is not JSON: a line starting with { or " is a JSON object {"id":..., "task":"..."} or a JSON string; any other line is the task as written`,
    };
  }
  // A line starting with " parses to a string, one starting with { to an object.
  return checkedTask(typeof value === 'string' ? { task: value } : (value as Record<string, unknown>), lineNumber);
}

function checkedTask(fields: Record<string, unknown>, lineNumber: number): TaskLineResult {
  const { id = lineNumber, task, env = {}, timeout } = fields;
  const validId = (typeof id === 'string' && id !== '') || (typeof id === 'number' && Number.isFinite(id));
  const invalid = (reason: string): TaskLineResult => (validId ? { kind: 'invalid', reason, id: id as string | number } : { kind: 'invalid', reason });
  if (!validId) return invalid('"id" must be a non-empty string or a number');
  const unknown = Object.keys(fields).filter((key) => !KNOWN_FIELDS.has(key));
  if (unknown.length > 0) return invalid(`unknown field${unknown.length > 1 ? 's' : ''} ${unknown.map((key) => `"${key}"`).join(', ')}; a task has id, task, env, timeout`);
  if (typeof task !== 'string' || task.trim() === '') return invalid('"task" must be a non-empty string');
  if (typeof env !== 'object' || env === null || Array.isArray(env)) return invalid('"env" must be an object of strings');
  const checkedEnv: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    if (typeof value !== 'string') return invalid(`"env"."${key}" must be a string`);
    if (key === '' || key.includes('=') || key.includes('\0') || value.includes('\0')) return invalid(`"env"."${key}" is not a valid variable`);
    if (key.startsWith('FEN_WIRE_')) return invalid(`"env"."${key}": the FEN_WIRE_* variables are set by supervise`);
    checkedEnv[key] = value;
  }
  const result: BatchTask = { id: id as string | number, task, env: checkedEnv };
  if (timeout !== undefined) {
    if (typeof timeout !== 'string' && typeof timeout !== 'number') return invalid('"timeout" must be a duration such as "10m" or a number of seconds');
    const parsed = parseTimeout(String(timeout));
    if (!parsed.ok) return invalid(`"timeout": ${parsed.reason}`);
    result.timeoutMs = parsed.ms;
  }
  return { kind: 'task', task: result };
}
