// The known name nearest to a misspelt one (fewest edits), for "did you mean" in the SDK's and the CLI's option errors.

/**
 * The name of `known` nearest to `name`: fewest edits, ignoring case, half an edit less for one containing the
 * other. `undefined` when the nearest is more than `maxEdits` away (a guess that far off would mislead).
 */
export function closestName(name: string, known: readonly string[], maxEdits = Infinity): string | undefined {
  const lower = name.toLowerCase();
  let best: string | undefined;
  let bestScore = Infinity;
  for (const candidate of known) {
    const other = candidate.toLowerCase();
    const score = editDistance(lower, other) - (other.includes(lower) || lower.includes(other) ? 0.5 : 0);
    if (score < bestScore) {
      best = candidate;
      bestScore = score;
    }
  }
  return bestScore <= maxEdits ? best : undefined;
}

/** Levenshtein distance (insertions, deletions, substitutions), one row at a time. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}
