/**
 * A unified diff of two texts (the lines of `a` against those of `b`), with `context` lines
 * around each change, as `diff -u` prints it; empty when they are equal. A longest common
 * subsequence of lines: pipeline files are small, so its quadratic table is fine.
 */
export function unifiedDiff(a: string, b: string, names: { from: string; to: string }, context = 3): string {
  if (a === b) return "";
  // No text is no lines: a file only in one version diffs against nothing (@@ -0,0 ...).
  const x = a === "" ? [] : a.split("\n");
  const y = b === "" ? [] : b.split("\n");
  const lcs: number[][] = Array.from({ length: x.length + 1 }, () => new Array<number>(y.length + 1).fill(0));
  for (let i = x.length - 1; i >= 0; i--) {
    for (let j = y.length - 1; j >= 0; j--) lcs[i]![j] = x[i] === y[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
  }
  // Each line of the edit script: " " kept, "-" only in a, "+" only in b, with its line numbers.
  const script: { op: " " | "-" | "+"; text: string; ai: number; bi: number }[] = [];
  let i = 0;
  let j = 0;
  while (i < x.length || j < y.length) {
    if (i < x.length && j < y.length && x[i] === y[j]) script.push({ op: " ", text: x[i]!, ai: i++, bi: j++ });
    // Removals before additions, as diff -u prints a changed line.
    else if (i < x.length && (j === y.length || lcs[i + 1]![j]! >= lcs[i]![j + 1]!)) script.push({ op: "-", text: x[i]!, ai: i++, bi: j });
    else script.push({ op: "+", text: y[j]!, ai: i, bi: j++ });
  }
  const out = [`--- ${names.from}`, `+++ ${names.to}`];
  let k = 0;
  while (k < script.length) {
    if (script[k]!.op === " ") {
      k++;
      continue;
    }
    const start = Math.max(0, k - context);
    let end = k;
    // A hunk runs on while the next change is within twice the context of the last.
    while (end < script.length) {
      let next = end;
      while (next < script.length && script[next]!.op !== " ") next++;
      let gap = next;
      while (gap < script.length && script[gap]!.op === " ") gap++;
      if (gap < script.length && gap - next <= 2 * context) end = gap;
      else {
        end = Math.min(script.length, next + context);
        break;
      }
    }
    const hunk = script.slice(start, end);
    const aLines = hunk.filter((l) => l.op !== "+").length;
    const bLines = hunk.filter((l) => l.op !== "-").length;
    const aStart = aLines === 0 ? hunk[0]!.ai : hunk.find((l) => l.op !== "+")!.ai + 1;
    const bStart = bLines === 0 ? hunk[0]!.bi : hunk.find((l) => l.op !== "-")!.bi + 1;
    out.push(`@@ -${aStart},${aLines} +${bStart},${bLines} @@`, ...hunk.map((l) => `${l.op}${l.text}`));
    k = end;
  }
  return out.join("\n") + "\n";
}
