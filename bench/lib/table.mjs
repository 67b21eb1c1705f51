// Renders benchmark rows as an aligned plain-text table (also used for the Markdown table in docs/performance.md).

/** A number with about three significant digits, thousands grouped, no exponent. */
export function formatNumber(value) {
  if (value === null || value === undefined) return '-';
  if (!Number.isFinite(value)) return String(value);
  const magnitude = Math.abs(value);
  if (magnitude >= 1000) return Math.round(value).toLocaleString('en-US');
  if (magnitude >= 100) return value.toFixed(0);
  if (magnitude >= 10) return value.toFixed(1);
  if (magnitude >= 1) return value.toFixed(2);
  if (magnitude === 0) return '0';
  return value.toPrecision(2);
}

function withUnit(value, unit) {
  const text = formatNumber(value);
  return text === '-' || !unit ? text : `${text} ${unit}`;
}

function metText(met) {
  if (met === true) return 'yes';
  if (met === false) return 'NO';
  return '-';
}

/** The cells of one row, in column order. */
export function cells(r) {
  return [
    r.bench,
    r.metric,
    withUnit(r.value, r.unit),
    r.baseline === null ? '-' : `${withUnit(r.baselineValue, r.unit)} (${r.baseline})`,
    r.ratio === null ? '-' : formatNumber(r.ratio),
    r.target ?? '-',
    metText(r.met),
  ];
}

export const COLUMNS = ['bench', 'metric', 'value', 'baseline', 'ratio', 'target', 'met'];

export function formatTable(rows) {
  const table = [COLUMNS, ...rows.map(cells)];
  const widths = COLUMNS.map((_, column) => Math.max(...table.map((line) => line[column].length)));
  const render = (line) => line.map((cell, column) => cell.padEnd(widths[column])).join('  ').trimEnd();
  return [render(table[0]), widths.map((w) => '-'.repeat(w)).join('  '), ...table.slice(1).map(render)].join('\n');
}

export function formatMarkdown(rows) {
  const escape = (cell) => cell.replaceAll('|', '\\|');
  return [
    `| ${COLUMNS.join(' | ')} |`,
    `| ${COLUMNS.map(() => '---').join(' | ')} |`,
    ...rows.map((r) => `| ${cells(r).map(escape).join(' | ')} |`),
  ].join('\n');
}
