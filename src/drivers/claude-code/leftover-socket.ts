// The socket Claude Code leaves behind when it is killed: where 2.1.328 puts it, and its removal once the process is gone.
import { lstatSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Claude Code 2.1.328 listens on `$XDG_RUNTIME_DIR/cc-socks/<pid>.sock` (else under `$TMPDIR`, else `/tmp`) and
 * removes it when it exits by itself; killed (SIGKILL: the ladder's last step, a cell's harness) it leaves it.
 */
export function claudeSocketPath(env: Readonly<Record<string, string>>, pid: number): string {
  const dir = env['XDG_RUNTIME_DIR'] || env['TMPDIR'] || '/tmp';
  return join(dir, 'cc-socks', `${pid}.sock`);
}

/**
 * Removes the socket of a Claude Code process that is gone, when it is there and is a socket (a `command` that is
 * a wrapper has another pid: nothing is found). Never throws: what cannot be removed stays, as Claude Code left it.
 */
export function removeLeftoverSocket(path: string): boolean {
  try {
    if (!lstatSync(path).isSocket()) return false;
    unlinkSync(path);
    return true;
  } catch {
    return false;
  }
}
