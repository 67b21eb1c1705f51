// Writes a results file's rows (default bench/results.json) as SVG charts, one per benchmark, into docs/performance/ (or the folder given).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from './lib/harness.mjs';
import { chartsOf } from './lib/svg-chart.mjs';

/** Where docs/performance.md finds the charts. */
export const CHART_DIR = join(ROOT, 'docs', 'performance');

/** Writes one chart per benchmark of `rows` into `dir`; returns the files written. */
export function writeCharts(rows, dir = CHART_DIR) {
  mkdirSync(dir, { recursive: true });
  const written = [];
  for (const [file, svg] of chartsOf(rows)) {
    writeFileSync(join(dir, file), svg);
    written.push(join(dir, file));
  }
  return written;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const file = process.argv[2] ?? join(ROOT, 'bench', 'results.json');
  const { rows } = JSON.parse(readFileSync(file, 'utf8'));
  for (const written of writeCharts(rows, process.argv[3] ?? CHART_DIR)) console.log(`wrote ${written}`);
}
