// Run inside a sandbox: tries to write inside and outside its cwd and to open TCP connections, and prints one JSON line of what happened.
// Usage: node sandbox-probe.mjs <host port on 127.0.0.1> <a path outside cwd to write> <a name for /tmp>
import { writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';

const [port, outside, tmpName] = process.argv.slice(2);

function tryWrite(path) {
  try {
    writeFileSync(path, 'probe');
    return 'ok';
  } catch (error) {
    return error.code ?? error.message;
  }
}

function tryConnect(host, port) {
  return new Promise((resolve) => {
    const socket = connect({ host, port: Number(port) });
    const timer = setTimeout(() => {
      socket.destroy();
      resolve('timeout');
    }, 3000);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.destroy();
      resolve('connected');
    });
    socket.once('error', (error) => {
      clearTimeout(timer);
      resolve(error.code ?? error.message);
    });
  });
}

const report = {
  cwd: tryWrite(join(process.cwd(), 'inside.txt')),
  outside: tryWrite(outside),
  tmp: tryWrite(join('/tmp', tmpName)),
  tmpdir: tryWrite(join(process.env.TMPDIR ?? '/nonexistent', tmpName)),
  loopback: await tryConnect('127.0.0.1', port),
  internet: await tryConnect('192.0.2.1', 80),
  traceparent: process.env.TRACEPARENT ?? null,
  pidNamespace: process.pid,
};
process.stdout.write(`${JSON.stringify(report)}\n`);
