import type { TaskState } from "../model/states.ts";
import { parseMappedTaskId } from "./fan-out.ts";

/**
 * What a rerun does to a run's task instances: which are reset to wait again, which are removed
 * (a whole-run rerun on a graph that no longer has them) and which are added (new in the graph).
 * A conflict (an unknown task, a task running now) refuses the whole rerun.
 */
export type RerunPlan =
  | { conflict: string }
  | { conflict?: undefined; reset: string[]; removed: string[]; added: string[] };

export function planRerun(
  runId: string,
  existing: ReadonlyMap<string, TaskState>,
  /** The tasks of the graph the run will follow, in its order. */
  wanted: readonly string[],
  /** Only these tasks (a partial rerun keeps the run's graph); all of `wanted` when absent. */
  taskIds?: readonly string[],
): RerunPlan {
  const inGraph = new Set(wanted);
  // A mapped instance named here runs again with its mapped task, whose list decides its
  // instances anew (kept keys run again with their history); a clear of one key alone is
  // planKeyClear's (key-clear.ts), which the engine uses for `task[key]`.
  const reset = taskIds ? [...new Set(taskIds.map((taskId) => parseMappedTaskId(taskId)?.taskId ?? taskId))] : [...inGraph];
  const unknown = reset.find((taskId) => !inGraph.has(taskId));
  if (unknown !== undefined) return { conflict: `run ${runId} has no task ${unknown}` };
  const busy = taskIds
    ? reset.filter((taskId) => existing.get(taskId) === "running")
    : [...existing].filter(([, state]) => state === "running").map(([taskId]) => taskId);
  if (busy.length > 0) return { conflict: `run ${runId} has a task running (${busy.join(", ")}); wait for it to finish` };
  return {
    reset,
    // A mapped task's instances are its own: the list it finds when it runs again decides them.
    removed: taskIds ? [] : [...existing.keys()].filter((taskId) => !inGraph.has(taskId) && parseMappedTaskId(taskId) === null),
    added: wanted.filter((taskId) => !existing.has(taskId)),
  };
}
