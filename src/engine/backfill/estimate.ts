import type { Pipeline } from "../../core/pipeline/types.ts";

export interface BackfillEstimate {
  runs: number;
  /** null when no task has a successful attempt to learn from. */
  p50Ms: number | null;
  p90Ms: number | null;
  /** Tasks with no successful attempt yet (counted as zero). */
  tasksWithoutHistory: string[];
  basis: string;
}

/**
 * Wall time of a backfill from the durations of past successful attempts: one run takes its
 * critical path; runs go in waves of the run cap; a pool's slots bound every task that uses it.
 */
export function estimateBackfill(
  pipeline: Pipeline,
  runs: number,
  maxActiveRuns: number,
  durations: ReadonlyMap<string, readonly number[]>,
  poolSlots: ReadonlyMap<string, number>,
  /** Only these tasks run (a backfill of some tasks, a restatement with opt-outs); default all. */
  only: ReadonlySet<string> | null = null,
): BackfillEstimate {
  const tasks = [...pipeline.tasks.values()].filter((t) => !only || only.has(t.id));
  const quantile = (taskId: string, q: number) => {
    const sorted = [...(durations.get(taskId) ?? [])].sort((a, b) => a - b);
    return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! : null;
  };
  const missing = tasks.map((t) => t.id).filter((id) => !durations.get(id)?.length);
  if (missing.length === tasks.length) {
    return { runs, p50Ms: null, p90Ms: null, tasksWithoutHistory: missing, basis: "no history" };
  }
  const wall = (q: number) => {
    const finish = new Map<string, number>();
    for (const task of tasks) {
      const start = Math.max(0, ...task.upstream.map((u) => finish.get(u) ?? 0));
      finish.set(task.id, start + (quantile(task.id, q) ?? 0));
    }
    const perRun = Math.max(0, ...finish.values());
    let total = Math.ceil(runs / Math.max(1, maxActiveRuns)) * perRun;
    for (const task of tasks) {
      const pool = task.policy.pool;
      const slots = pool ? poolSlots.get(pool) : undefined;
      if (slots) total = Math.max(total, (runs * (quantile(task.id, q) ?? 0) * task.policy.slots) / slots);
    }
    return Math.round(total);
  };
  return {
    runs,
    p50Ms: wall(0.5),
    p90Ms: wall(0.9),
    tasksWithoutHistory: missing,
    basis: `p50/p90 of the last successful attempts of each task, ${maxActiveRuns} runs at once, pools applied`,
  };
}
