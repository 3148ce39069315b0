import type { Pipeline } from "../../core/pipeline/types.ts";
import { restateRoom } from "../../core/policy/restate.ts";
import { formatDuration } from "../../core/time/duration.ts";
import { estimateBackfill } from "./estimate.ts";

export interface RestateEstimate {
  /** Intervals restated after each scheduled one. */
  last: number;
  /** p50 of one run of the restated tasks (their critical path), or null without history. */
  perRunP50Ms: number | null;
  /** Work the window adds per interval: `last` runs of the restated tasks. */
  addedPerIntervalMs: number | null;
  /** How long the window takes to get through under the run cap's share and the pools. */
  wallP50Ms: number | null;
  /** Tasks left out of restatements (`restate: false`). */
  optedOut: string[];
  tasksWithoutHistory: string[];
  /** One line: "restating 7 days adds about 7x the daily run: 3m a day at recent durations (...)". */
  summary: string;
}

const UNIT: Record<string, [plural: string, adjective: string, per: string]> = {
  daily: ["days", "daily", "a day"],
  hourly: ["hours", "hourly", "an hour"],
  weekly: ["weeks", "weekly", "a week"],
  monthly: ["months", "monthly", "a month"],
};

/**
 * The backfill estimate applied to a pipeline's `restate` option: each scheduled interval
 * brings `last` more runs of the tasks that take part, at the durations of recent successful
 * attempts. Null for a pipeline that does not restate.
 */
export function estimateRestatement(
  pipeline: Pipeline,
  durations: ReadonlyMap<string, readonly number[]>,
  poolSlots: ReadonlyMap<string, number>,
): RestateEstimate | null {
  if (!pipeline.restate) return null;
  const { last } = pipeline.restate;
  const taking = new Set([...pipeline.tasks.values()].filter((t) => t.restate).map((t) => t.id));
  const optedOut = [...pipeline.tasks.keys()].filter((id) => !taking.has(id));
  const one = estimateBackfill(pipeline, 1, 1, durations, poolSlots, taking);
  const window = estimateBackfill(pipeline, last, Math.max(1, restateRoom(pipeline.maxActiveRuns, 0)), durations, poolSlots, taking);
  const [plural, adjective, per] = UNIT[pipeline.schedule.kind] ?? ["intervals", "scheduled", "an interval"];
  const added = one.p50Ms === null ? null : one.p50Ms * last;
  const round = (ms: number) => formatDuration(ms < 1000 ? ms : Math.round(ms / 1000) * 1000);
  const notes = [
    one.p50Ms === null ? null : `p50 ${round(one.p50Ms)} a run, the window done in about ${round(window.p50Ms!)}`,
    optedOut.length ? `not restated: ${optedOut.join(", ")}` : null,
    one.p50Ms !== null && one.tasksWithoutHistory.length ? `no history yet for ${one.tasksWithoutHistory.join(", ")}` : null,
  ].filter((n) => n !== null);
  const head = `restating ${last} ${last === 1 ? plural.replace(/s$/, "") : plural} adds about ${last}x the ${adjective} run`;
  return {
    last,
    perRunP50Ms: one.p50Ms,
    addedPerIntervalMs: added,
    wallP50Ms: window.p50Ms,
    optedOut,
    tasksWithoutHistory: one.tasksWithoutHistory,
    summary:
      added === null
        ? `${head}; no successful attempt yet to say how long${notes.length ? ` (${notes.join("; ")})` : ""}`
        : `${head}: ${round(added)} ${per} at recent durations${notes.length ? ` (${notes.join("; ")})` : ""}`,
  };
}
