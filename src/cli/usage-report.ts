// The usage ledger as supervise --tasks prints it on stderr at the end: the total, then by protocol, model and status.
import type { UsageLedger, UsageTotals } from '../pool/types.js';

/** `3 runs, 1234 tokens (in 1000, out 234), $0.0123`: cost and cache figures only when there are some. */
function describe(totals: UsageTotals): string {
  const parts = [`${totals.runs} run${totals.runs === 1 ? '' : 's'}`];
  const split = [`in ${totals.inputTokens}`, `out ${totals.outputTokens}`];
  if (totals.cacheReadTokens > 0) split.push(`cache read ${totals.cacheReadTokens}`);
  if (totals.cacheWriteTokens > 0) split.push(`cache write ${totals.cacheWriteTokens}`);
  parts.push(`${totals.tokens} tokens (${split.join(', ')})`);
  if (totals.costUsd > 0 || totals.withoutCost < totals.runs) parts.push(`$${totals.costUsd.toFixed(4)}`);
  return parts.join(', ');
}

function grouped(label: string, groups: Partial<Record<string, UsageTotals>>): string | undefined {
  const entries = Object.entries(groups).filter((entry): entry is [string, UsageTotals] => entry[1] !== undefined);
  if (entries.length === 0) return undefined;
  return `  by ${label}: ${entries.map(([name, totals]) => `${name}: ${describe(totals)}`).join('; ')}`;
}

/** The lines of the ledger (without the `supervise: ` prefix). */
export function usageLines(ledger: UsageLedger): string[] {
  const { total } = ledger;
  const notes: string[] = [];
  if (total.withoutUsage > 0) notes.push(`incomplete: ${total.withoutUsage} run${total.withoutUsage === 1 ? '' : 's'} reported no usage`);
  const costless = total.withoutCost - total.withoutUsage;
  if (costless > 0) notes.push(`no cost reported by ${costless} run${costless === 1 ? '' : 's'}`);
  const lines = [`usage: ${describe(total)}${notes.map((note) => `; ${note}`).join('')}`];
  for (const line of [grouped('protocol', ledger.byProtocol), grouped('model', ledger.byModel), grouped('status', ledger.byStatus)]) {
    if (line !== undefined) lines.push(line);
  }
  return lines;
}
