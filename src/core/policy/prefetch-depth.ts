/**
 * How many attempts a worker claims ahead of its free slots. A number is taken as it is. "auto"
 * (the default) claims ahead only while the worker's recent task code has been short: a claim is
 * one write transaction, a few milliseconds, which bounds a worker whose tasks last about as
 * long; an attempt claimed ahead of a long task would only wait in this worker's queue while
 * another worker with a free slot could have run it. Short: the median of the last
 * AUTO_PREFETCH_WINDOW task durations under AUTO_PREFETCH_SHORT_MS; then twice the concurrency
 * (measured best on PostgreSQL and SQLite, docs/benchmarks.md). With no task seen yet, none.
 */
export type Prefetch = number | "auto";

/** Task code shorter than this leaves a claim's cost visible: claiming ahead pays. */
export const AUTO_PREFETCH_SHORT_MS = 1_000;
/** How many of the latest task durations the median is taken over. */
export const AUTO_PREFETCH_WINDOW = 16;

export function prefetchDepth(prefetch: Prefetch, concurrency: number, recentRunMs: readonly number[]): number {
  if (prefetch !== "auto") return prefetch;
  if (recentRunMs.length === 0) return 0;
  const sorted = recentRunMs.slice(-AUTO_PREFETCH_WINDOW).sort((a, b) => a - b);
  const median = sorted[Math.floor((sorted.length - 1) / 2)]!;
  return median < AUTO_PREFETCH_SHORT_MS ? 2 * concurrency : 0;
}
