// What a recorded request says, whatever its API: the user's texts (without the agents' own context blocks), the
// tool results of the latest user input, the tools offered; and the agent's shell tool among them.
import type { ModelToolCall, ModelToolResult } from './types.js';

/** One message of a conversation, reduced to what a test asserts on. */
export interface Entry {
  from: 'user' | 'model' | 'other';
  texts: string[];
  toolResults: ModelToolResult[];
}

/**
 * A text that is one whole `<tag>...</tag>` element is context the agent adds as user text (Claude Code's
 * `<system-reminder>`, Codex's `<environment_context>` and `<user_instructions>`), not the user's words.
 */
const AGENT_CONTEXT = /^\s*<([A-Za-z][\w-]*)(?:\s[^>]*)?>[\s\S]*<\/\1>\s*$/;

export function userTextsOf(entries: readonly Entry[]): string[] {
  return entries.flatMap((entry) => {
    if (entry.from !== 'user') return [];
    const own = entry.texts.filter((text) => !AGENT_CONTEXT.test(text));
    return own.length === 0 ? [] : [own.join('\n')];
  });
}

/** The entries after the model last spoke: the latest input. */
export function latestInput(entries: readonly Entry[]): Entry[] {
  let start = entries.length;
  while (start > 0 && entries[start - 1]!.from !== 'model') start--;
  return entries.slice(start);
}

/** A tool's output as text: a string as it is, content parts' texts joined, anything else as JSON. */
export function outputText(output: unknown): string {
  if (typeof output === 'string') return output;
  if (Array.isArray(output)) {
    return output.map((part) => (isObject(part) && typeof part['text'] === 'string' ? part['text'] : JSON.stringify(part))).join('\n');
  }
  return JSON.stringify(output) ?? '';
}

/**
 * The shell tools of the agents, in the order they are looked for, each with the arguments a command becomes:
 * Claude Code, Codex 0.169 (`exec_command`), older Codex (`shell_command`, `shell` with an argv), Gemini CLI.
 */
const SHELL_TOOLS: ReadonlyArray<readonly [string, (command: string) => Record<string, unknown>]> = [
  ['Bash', (command) => ({ command })],
  ['exec_command', (command) => ({ cmd: command })],
  ['shell_command', (command) => ({ command })],
  ['shell', (command) => ({ command: ['bash', '-lc', command] })],
  ['run_shell_command', (command) => ({ command })],
];

/** The call of the agent's shell tool that runs `command`, or why there is none among the tools offered. */
export function shellCall(command: string, offered: readonly string[]): ModelToolCall | string {
  const found = SHELL_TOOLS.find(([name]) => offered.includes(name));
  if (found !== undefined) return { name: found[0], input: found[1](command) };
  return `the turn calls the shell tool but the request offers none of ${SHELL_TOOLS.map(([name]) => name).join(', ')} (it offers ${offered.length === 0 ? 'no tool' : offered.join(', ')})`;
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
