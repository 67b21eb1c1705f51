// A real redis-server for a test: a free loopback port, a private temp dir, stop/restart/kill, and checks that nothing is left.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { onPath } from './optional-tools.js';

/** Whether redis-server is installed (the tests that need it are skipped when it is not). */
export function haveRedis(): boolean {
  return onPath('redis-server');
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ port, host: '127.0.0.1' });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

export interface RedisServer {
  readonly url: string;
  readonly port: number;
  /** The server's pid (changes on restart). */
  readonly pid: number | undefined;
  /** SIGTERM and wait for the exit (data kept when persistent). */
  stop(): Promise<void>;
  /** Starts it again on the same port and directory. */
  start(): Promise<void>;
  /** stop(), then start() after `downMs`. */
  restart(downMs?: number): Promise<void>;
  /** Stops it and removes its directory. */
  dispose(): Promise<void>;
}

/**
 * Starts redis-server on a free loopback port. `persistent`: append-only file with fsync on every write,
 * so a restart keeps the queue and the streams (as a production Redis should); otherwise nothing is saved.
 */
export async function startRedis(options: { persistent?: boolean } = {}): Promise<RedisServer> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'subvisor-redis-'));
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--daemonize', 'no', '--loglevel', 'warning'];
  args.push(...(options.persistent === true ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no']));
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();

  const start = async () => {
    const proc = spawn('redis-server', args, { stdio: ['ignore', 'ignore', 'pipe'] });
    child = proc;
    let stderr = '';
    proc.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    exited = new Promise((resolve) => proc.once('exit', () => resolve()));
    const deadline = Date.now() + 10_000;
    while (!(await canConnect(port))) {
      if (proc.exitCode !== null || Date.now() > deadline) throw new Error(`redis-server did not start on ${port}: ${stderr}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  const stop = async () => {
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    await exited;
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    get pid() {
      return child?.pid;
    },
    stop,
    start,
    async restart(downMs = 0) {
      await stop();
      if (downMs > 0) await new Promise((resolve) => setTimeout(resolve, downMs));
      await start();
    },
    async dispose() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Client connections Redis has open now, other than the asking one (CLIENT LIST through redis-cli). */
export function redisClients(port: number): number {
  const list = execFileSync('redis-cli', ['-p', String(port), 'CLIENT', 'LIST'], { encoding: 'utf8' });
  return list.split('\n').filter((line) => line.includes('id=') && !line.includes('cmd=client')).length;
}
