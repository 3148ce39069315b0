import type { RunState } from "../model/states.ts";

export interface BackfillProgress {
  /** Intervals the backfill will run (create + rerun). */
  planned: number;
  notStarted: number;
  queued: number;
  running: number;
  succeeded: number;
  failed: number;
  /** Intervals it leaves or refuses. */
  untouched: number;
}

/** A backfill's progress from the counts of its items and of its runs by state. */
export function backfillProgress(
  items: { planned?: number | null; notStarted?: number | null; untouched?: number | null } | undefined,
  runs: Iterable<{ state: RunState; n: number }>,
): BackfillProgress {
  const progress: BackfillProgress = {
    planned: items?.planned ?? 0,
    notStarted: items?.notStarted ?? 0,
    queued: 0,
    running: 0,
    succeeded: 0,
    failed: 0,
    untouched: items?.untouched ?? 0,
  };
  for (const r of runs) {
    if (r.state === "queued") progress.queued += Number(r.n);
    else if (r.state === "running") progress.running += Number(r.n);
    else if (r.state === "success") progress.succeeded += Number(r.n);
    else if (r.state === "failed") progress.failed += Number(r.n);
  }
  return progress;
}
