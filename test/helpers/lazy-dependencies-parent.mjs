// A parent that imports the built subvisor and reports which lazily loaded packages (ajv, ajv-formats, ws) are loaded: after the import, after a run with an outputSchema, after a WebSocket connection.
import { createRequire } from 'node:module';
import { createServer } from 'node:net';

const require = createRequire(import.meta.url);
const loaded = () => [...new Set(Object.keys(require('node:module')._cache).flatMap((path) => path.match(/node_modules\/(ajv-formats|ajv|ws)\//)?.[1] ?? []))].sort();

const { spawnRun, connectRun } = await import('../../dist/index.js');
const report = { afterImport: loaded() };

const schemaRun = spawnRun({ command: process.execPath, args: ['-e', 'setTimeout(() => {}, 60000)'], task: 'x', outputSchema: { type: 'object' }, killGraceMs: 200 });
report.afterSchema = loaded();
report.schemaOutcome = (await schemaRun.kill()).status;

const server = createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const { port } = server.address();
await new Promise((resolve) => server.close(resolve));
const refused = await connectRun({ protocol: 'mew', url: `ws://127.0.0.1:${port}`, task: 't' }).outcome;
report.afterWebSocket = loaded();
report.webSocketOutcome = refused.errorCode;
process.stdout.write(JSON.stringify(report));
