/**
 * How much mapped work a backfill will make, estimated from history: a mapped task's item count
 * is known only when its list is found, so a preview says, for each mapped task, the median of
 * the item counts of its last completed runs (and the last one) as the instances a date is
 * expected to have, times the dates to run. An estimate, labelled so: a day's list may differ.
 */

/** How many completed runs of a pipeline the estimate reads. */
export const MAPPED_WORK_HISTORY_RUNS = 20;

export interface MappedTaskEstimate {
  taskId: string;
  /** The median item count of its last completed runs; null with none. */
  perDate: number | null;
  /** The item count of its latest completed run; null with none. */
  last: number | null;
  /** How many completed runs the counts come from. */
  runsSeen: number;
  /** perDate times the dates to run; null with no history. */
  instances: number | null;
}

export interface MappedWorkEstimate {
  /** The dates the backfill runs (created or run again). */
  dates: number;
  tasks: MappedTaskEstimate[];
  /** The instances of every mapped task with history, over all dates. */
  instances: number;
  tasksWithoutHistory: string[];
  basis: string;
}

/**
 * `counts`: each mapped task's item counts in its pipeline's last completed runs, newest first
 * (a task whose list was never found in them has none). `mappedTasks`: the mapped tasks the
 * backfill runs, in pipeline order.
 */
export function estimateMappedWork(mappedTasks: readonly string[], counts: ReadonlyMap<string, readonly number[]>, dates: number): MappedWorkEstimate {
  const tasks = mappedTasks.map((taskId): MappedTaskEstimate => {
    const seen = counts.get(taskId) ?? [];
    if (seen.length === 0) return { taskId, perDate: null, last: null, runsSeen: 0, instances: null };
    const perDate = median(seen);
    return { taskId, perDate, last: seen[0]!, runsSeen: seen.length, instances: perDate * dates };
  });
  return {
    dates,
    tasks,
    instances: tasks.reduce((sum, t) => sum + (t.instances ?? 0), 0),
    tasksWithoutHistory: tasks.filter((t) => t.perDate === null).map((t) => t.taskId),
    basis: `estimate: the median item count of each mapped task in its last ${MAPPED_WORK_HISTORY_RUNS} completed runs, times ${dates} date${dates === 1 ? "" : "s"}`,
  };
}

/** The middle count (of two middles, their mean rounded up): a whole number of instances. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : Math.ceil((sorted[mid - 1]! + sorted[mid]!) / 2);
}
