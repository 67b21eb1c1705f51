// A parent the parent-sigkill cells kill with SIGKILL: one agent run through the built subvisor (its options in argv), approving every tool, kept alive.
import { spawnRun } from '../../dist/index.js';

const options = JSON.parse(process.argv[2]);
const run = spawnRun({ ...options, approve: () => true, keepAlive: true });
await run.outcome;
