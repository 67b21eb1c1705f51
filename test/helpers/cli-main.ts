// Test helper: runs supervise's main() in this process with in-memory streams, for checks that need no real process (usage errors).
import { PassThrough, Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { main } from '../../src/cli/main.js';
import type { CliResult } from './cli-run.js';

/**
 * main(argv) as the bin runs it, stdin not a terminal: `input` is standard input (default empty, like
 * /dev/null). Resolves with the exit code main returned and everything written to stdout and stderr.
 * The bin itself is proven by the end-to-end tests of test/process/cli/cli-args.test.ts; this one skips its Node start-up.
 */
export async function runMain(argv: readonly string[], options: { input?: string } = {}): Promise<CliResult> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const out: Buffer[] = [];
  let err = '';
  stdout.on('data', (chunk: Buffer) => out.push(chunk));
  stderr.setEncoding('utf8');
  stderr.on('data', (chunk: string) => {
    err += chunk;
  });
  const code = await main(argv, {
    stdin: () => Readable.from(options.input === undefined || options.input === '' ? [] : [Buffer.from(options.input)]),
    stdinIsTTY: false,
    stdout,
    stderr,
  });
  // Chunks written last may still be on their way through the pass-throughs.
  stdout.end();
  stderr.end();
  await Promise.all([finished(stdout), finished(stderr)]);
  return { code, signal: null, stdout: Buffer.concat(out), stderr: err };
}

/**
 * runMain with `env` given as --env pairs: what the child of a real CLI process would inherit from the CLI's
 * environment (a fake child's scenario and kit variables).
 */
export function runMainWithEnv(env: Record<string, string>, argv: readonly string[], options: { input?: string } = {}): Promise<CliResult> {
  return runMain([...Object.entries(env).flatMap(([key, value]) => ['--env', `${key}=${value}`]), ...argv], options);
}
