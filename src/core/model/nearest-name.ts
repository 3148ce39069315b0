/**
 * The known name a mistyped one most likely meant, for "did you mean" in every check of keys
 * (pipeline options, task options, the config) and of names (params, pools): the same spelling
 * but for case, `_` or `-`; else within two edits; else a shared stem of four letters or more
 * (`retry` -> `retries`, three edits apart). The nearest by edits wins; null when none is near.
 */
export function nearestName(name: string, known: Iterable<string>): string | null {
  const wanted = normal(name);
  let best: string | null = null;
  let bestDistance = Infinity;
  for (const candidate of known) {
    const other = normal(candidate);
    if (other === wanted) return candidate;
    const d = editDistance(wanted, other);
    const near = d <= 2 || sharedPrefix(wanted, other) >= Math.min(4, wanted.length, other.length);
    if (near && d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  return best;
}

/** ` (did you mean "retries"?)`, or ` (known: a, b, c)` when nothing is near; "" when nothing is known. */
export function suggestion(name: string, known: readonly string[]): string {
  const near = nearestName(name, known);
  if (near) return ` (did you mean "${near}"?)`;
  return known.length ? ` (known: ${known.join(", ")})` : "";
}

function normal(name: string): string {
  return name.toLowerCase().replace(/[_-]/g, "");
}

function sharedPrefix(a: string, b: string): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

/** Levenshtein distance with adjacent transpositions counted as one edit. */
function editDistance(a: string, b: string): number {
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = d;
    }
  }
  return rows[a.length]![b.length]!;
}
