// A small SVG writer for the benchmark table: one chart per benchmark, each row its value beside its baseline (no dependency, no external service).
import { formatNumber } from './table.mjs';

const WIDTH = 900;
const LABEL_WIDTH = 330;
const BAR_WIDTH = 360;
const ROW_HEIGHT = 46;
const TOP = 44;
const COLOURS = { value: '#2f6fec', baseline: '#b8c0cc', met: '#1a7f37', missed: '#c2261f', ink: '#1d2430', muted: '#667085' };

function escapeXml(text) {
  return String(text).replace(/[<>&'"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', "'": '&apos;', '"': '&quot;' })[c]);
}

/** `text` cut to `chars` characters. */
function clip(text, chars) {
  return text.length <= chars ? text : `${text.slice(0, chars - 1)}…`;
}

function withUnit(value, unit) {
  return `${formatNumber(value)}${unit ? ` ${unit}` : ''}`;
}

/**
 * One benchmark's rows as a chart: for each row its value (blue) and its baseline (grey) as bars scaled to
 * the larger of the two (the rows' units differ), the figures and the ratio beside them, and the target in
 * green when met, red when missed. A negative value (a memory delta) is drawn from zero, with its figure.
 */
export function benchChart(bench, rows) {
  const height = TOP + rows.length * ROW_HEIGHT + 16;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="system-ui, sans-serif" font-size="12">`,
    `<rect width="${WIDTH}" height="${height}" fill="#ffffff"/>`,
    `<text x="12" y="24" font-size="15" font-weight="600" fill="${COLOURS.ink}">${escapeXml(bench)}</text>`,
    `<text x="${WIDTH - 12}" y="24" text-anchor="end" fill="${COLOURS.muted}">blue: subvisor · grey: the baseline measured in the same run</text>`,
  ];
  rows.forEach((row, index) => {
    const y = TOP + index * ROW_HEIGHT;
    const hasBaseline = row.baselineValue !== null && Number.isFinite(row.baselineValue);
    const scale = Math.max(Math.abs(row.value), hasBaseline ? Math.abs(row.baselineValue) : 0) || 1;
    const barX = LABEL_WIDTH + 12;
    const valueWidth = Math.max(1, (Math.abs(row.value) / scale) * BAR_WIDTH);
    parts.push(`<text x="12" y="${y + 14}" fill="${COLOURS.ink}"><title>${escapeXml(row.metric)}</title>${escapeXml(clip(row.metric, 52))}</text>`);
    const status = row.met === true ? 'met' : row.met === false ? 'missed' : null;
    const ratio = row.ratio === null ? '' : `ratio ${formatNumber(row.ratio)}`;
    const target = row.target ? ` · target ${row.target}` : '';
    parts.push(
      `<text x="12" y="${y + 30}" fill="${status === null ? COLOURS.muted : COLOURS[status]}">${escapeXml(clip(`${ratio}${target}${status === null ? '' : ` (${status})`}`, 60))}</text>`,
    );
    parts.push(`<rect x="${barX}" y="${y + 4}" width="${valueWidth.toFixed(1)}" height="14" fill="${COLOURS.value}"/>`);
    parts.push(`<text x="${barX + valueWidth + 6}" y="${y + 15}" fill="${COLOURS.ink}">${escapeXml(withUnit(row.value, row.unit))}</text>`);
    if (hasBaseline) {
      const baselineWidth = Math.max(1, (Math.abs(row.baselineValue) / scale) * BAR_WIDTH);
      parts.push(`<rect x="${barX}" y="${y + 21}" width="${baselineWidth.toFixed(1)}" height="14" fill="${COLOURS.baseline}"/>`);
      parts.push(
        `<text x="${barX + baselineWidth + 6}" y="${y + 32}" fill="${COLOURS.muted}">${escapeXml(clip(`${withUnit(row.baselineValue, row.unit)} (${row.baseline})`, 34))}</text>`,
      );
    }
  });
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}

/** The file name of a benchmark's chart. */
export function chartFile(bench) {
  return `${bench.replace(/[^A-Za-z0-9]+/g, '-').toLowerCase()}.svg`;
}

/** Every benchmark of `rows` as its chart: a map of file name to SVG text, in the table's order. */
export function chartsOf(rows) {
  const byBench = new Map();
  for (const row of rows) byBench.set(row.bench, [...(byBench.get(row.bench) ?? []), row]);
  return new Map([...byBench].map(([bench, benchRows]) => [chartFile(bench), benchChart(bench, benchRows)]));
}
