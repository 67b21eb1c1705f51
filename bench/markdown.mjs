// Prints a results file (default bench/results.json) as the Markdown table in docs/performance.md.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './lib/harness.mjs';
import { formatMarkdown } from './lib/table.mjs';

const file = process.argv[2] ?? join(ROOT, 'bench', 'results.json');
const { date, machine, durationS, rows } = JSON.parse(readFileSync(file, 'utf8'));
console.log(formatMarkdown(rows));
console.log(
  `\n${machine.cpus} x ${machine.cpuModel}, ${Math.round(machine.totalMemoryMB / 1024)} GB, Node ${machine.node}, ${machine.platform}; ${date.slice(0, 10)}, ${Math.round(durationS)} s in all.`,
);
