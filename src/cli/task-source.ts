// Reads the task (the first prompt) from --task, --task-file or a non-terminal standard input, and a daemon's token from --token-file.
import { readFile } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { UsageError } from './usage-error.js';

export interface TaskInput {
  task?: string;
  taskFile?: string;
  /** Standard input, created only when it is read (touching process.stdin opens a handle). */
  stdin: () => Readable;
  stdinIsTTY: boolean;
}

export type TaskOrigin = '--task' | '--task-file' | 'stdin';

/** Trailing line breaks are dropped: `echo task | supervise` should send "task", not "task\n". */
function withoutTrailingNewlines(text: string): string {
  return text.replace(/(?:\r?\n)+$/, '');
}

async function readAll(stream: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

/** Throws UsageError when no task is given, it cannot be read, or it is empty. */
export async function readTask(input: TaskInput): Promise<{ text: string; origin: TaskOrigin }> {
  let text: string;
  let origin: TaskOrigin;
  if (input.task !== undefined) {
    text = input.task;
    origin = '--task';
  } else if (input.taskFile !== undefined) {
    try {
      text = withoutTrailingNewlines(await readFile(input.taskFile, 'utf8'));
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? String(error);
      throw new UsageError(`--task-file ${input.taskFile}: cannot read it (${code}).`);
    }
    origin = '--task-file';
  } else if (!input.stdinIsTTY) {
    text = withoutTrailingNewlines(await readAll(input.stdin()));
    origin = 'stdin';
  } else {
    throw new UsageError('no task: give --task TEXT, --task-file FILE, or pipe the task into standard input.');
  }
  if (text.trim().length === 0) {
    throw new UsageError(`the task from ${origin} is empty; give the child something to do.`);
  }
  return { text, origin };
}

/**
 * Reads the bearer token from `--token-file` (never from the command line, where other users could see
 * it in the process list). Surrounding whitespace and line breaks are dropped. Errors name the file,
 * never its content.
 */
export async function readToken(file: string): Promise<string> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'unreadable';
    throw new UsageError(`--token-file ${file}: cannot read it (${code}).`);
  }
  const token = text.trim();
  if (token.length === 0) throw new UsageError(`--token-file ${file} is empty.`);
  return token;
}
