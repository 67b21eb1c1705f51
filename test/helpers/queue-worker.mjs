// A queue worker process for the queue tests: startWorker with the options given as JSON in argv[2];
// prints READY, then START <id> <attempt> and END <id> <status|handed-back|lost> lines; SIGTERM closes it.
import { startWorker } from 'subvisor/queue';

const options = JSON.parse(process.argv[2]);
const worker = startWorker({ ...options, handleSignals: true });
worker.on('error', (error) => process.stderr.write(`worker error: ${error.message}\n`));
worker.on('start', (id, attempt) => process.stdout.write(`START ${id} ${attempt}\n`));
worker.on('end', (id, outcome, handedBack) =>
  process.stdout.write(`END ${id} ${handedBack ? 'handed-back' : (outcome?.status ?? 'lost')}\n`),
);
await worker.ready();
process.stdout.write(`READY ${worker.name}\n`);
