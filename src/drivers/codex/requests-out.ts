// What subvisor asks of Codex's app-server: the handshake, the thread it starts or resumes, each turn's input, with the approval policy and sandbox it asks for.
import type { JsonObject } from '../../wire/index.js';

/**
 * The approval policy subvisor asks for unless the caller's `args` override Codex's `approval_policy`:
 * `untrusted` sends every command that is not on Codex's list of known-safe reads to the parent for approval
 * (`approve`, denied without one).
 */
export const DEFAULT_APPROVAL_POLICY = 'untrusted';

/** The sandbox subvisor asks for unless the caller's `args` override Codex's `sandbox_mode`: writes in `cwd` only, no network. */
export const DEFAULT_SANDBOX = 'workspace-write';

/** What the session needs to write its requests. */
export interface ThreadOptions {
  /** The thread's working directory (the run's `cwd`, or the parent's). */
  cwd: string;
  /** The caller's arguments after `app-server` (their `-c` overrides are read). */
  args: readonly string[];
  /** Resume this thread (`thread/resume`) rather than start one. */
  resume: string | undefined;
}

/** How subvisor names itself in `initialize` (Codex shows it in its user agent). */
export function initializeParams(version: string): JsonObject {
  return { clientInfo: { name: 'subvisor', title: 'subvisor', version }, capabilities: null };
}

/**
 * `thread/start` (or `thread/resume`): the cwd, and the approval policy and sandbox subvisor asks for, each left
 * out when the caller's `args` set it through Codex's own config override (`-c approval_policy=...`,
 * `-c sandbox_mode=...`): then Codex's configuration, with that override, decides.
 */
export function threadRequest(options: ThreadOptions): { method: 'thread/start' | 'thread/resume'; params: JsonObject } {
  const overridden = configOverrides(options.args);
  const params: JsonObject = { cwd: options.cwd };
  if (!overridden.has('approval_policy')) params['approvalPolicy'] = DEFAULT_APPROVAL_POLICY;
  if (!overridden.has('sandbox_mode')) params['sandbox'] = DEFAULT_SANDBOX;
  if (options.resume === undefined) return { method: 'thread/start', params };
  // Without excludeTurns 0.169 sends the whole history back and a deprecation notice.
  return { method: 'thread/resume', params: { threadId: options.resume, ...params, excludeTurns: true } };
}

/** One user text as Codex's input. */
export function textInput(text: string): JsonObject[] {
  return [{ type: 'text', text, text_elements: [] }];
}

/** `turn/start`: the text, and the output schema that constrains the turn's final message (an object schema only). */
export function turnStartParams(threadId: string, text: string, outputSchema: unknown): JsonObject {
  const params: JsonObject = { threadId, input: textInput(text) };
  if (typeof outputSchema === 'object' && outputSchema !== null) params['outputSchema'] = outputSchema as JsonObject;
  return params;
}

/**
 * The config keys the caller's arguments override (`-c key=value`, `--config key=value`, `--config=key=value`,
 * `-ckey=value`), as Codex's command line reads them.
 */
export function configOverrides(args: readonly string[]): Set<string> {
  const keys = new Set<string>();
  for (let index = 0; index < args.length; index++) {
    const arg = args[index]!;
    let setting: string | undefined;
    if (arg === '-c' || arg === '--config') setting = args[++index];
    else if (arg.startsWith('--config=')) setting = arg.slice('--config='.length);
    else if (arg.startsWith('-c') && arg.length > 2 && !arg.startsWith('--')) setting = arg.slice(2);
    const key = setting?.split('=', 1)[0]?.trim();
    if (key !== undefined && key !== '') keys.add(key);
  }
  return keys;
}
