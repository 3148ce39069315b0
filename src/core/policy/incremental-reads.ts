import type { TriggerKind } from "../model/states.ts";

/**
 * What an incremental load reads in a run, and whether it may move the watermark: decided here
 * once, for the data plane's `incrementalLoad` and for the engine's `ctx.watermarks`.
 *
 * - "stream": the pipeline's own regular runs (the schedule, or a dataset for a data-triggered
 *   pipeline) read from the saved watermark minus the lookback, with no upper bound, and move it.
 *   Their later tries (a retry, a clear, `idem run` of that day again) also read back to their
 *   interval's start minus the lookback, so rerunning an old scheduled day reloads that day; the
 *   watermark still only moves forward.
 * - "window": a manual run, a backfill and a restatement read their interval's window (its start
 *   minus the lookback up to its end, as a time-window partition does) and never move the
 *   watermark, which belongs to the stream.
 * - "unknown": no trigger (a loader called outside idem): read from the watermark and move it.
 */
export type IncrementalRead = "stream" | "window" | "unknown";

export function incrementalRead(trigger: TriggerKind | null | undefined): IncrementalRead {
  if (trigger === null || trigger === undefined) return "unknown";
  const reads: Record<TriggerKind, IncrementalRead> = { schedule: "stream", data: "stream", manual: "window", backfill: "window", restate: "window" };
  return reads[trigger];
}

/** Only the stream moves a watermark. */
export function movesWatermark(trigger: TriggerKind | null | undefined): boolean {
  return incrementalRead(trigger) !== "window";
}
