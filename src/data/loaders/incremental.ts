import type { RunTrigger, WriteContext } from "../context.ts";
import type { Source } from "../sources/source.ts";
import { compareWatermarks, subtractLookback, type Watermark, type WatermarkStore } from "../watermark.ts";
import { mergeByKey, type MergeByKeyOptions, type MergeSummary } from "./merge.ts";

export interface IncrementalOptions extends Omit<MergeByKeyOptions, "source" | "whenMissingFromSource" | "watermarkColumn" | "context"> {
  /**
   * Who is writing, with the run's trigger: `writeContextFrom(ctx)`. The loader reads the trigger
   * itself, so a backfill or a restatement loads its rows but never moves the watermark; a
   * context built by hand must say `trigger` (null outside idem) or it does not type-check.
   */
  context: WriteContext & { trigger: RunTrigger | null };
  /** The source of rows newer than `since` (null on the first run: read everything). */
  source: (since: Watermark | null) => Source;
  /** The column whose maximum over the staged rows becomes the next watermark. */
  watermarkColumn: string;
  /** How far before the saved watermark to read again, for rows that arrive late. */
  lookback?: number | string;
  store: WatermarkStore;
  /** Set false to load without moving the watermark (a backfill never moves it anyway). */
  moveWatermark?: boolean;
}

export interface IncrementalSummary extends MergeSummary {
  readSince: Watermark | null;
  watermarkBefore: Watermark | null;
  watermarkAfter: Watermark | null;
}

/**
 * Reads rows newer than the saved watermark minus the lookback, merges them by key, and only
 * after that commit saves the new watermark, which never moves backwards. Killed between the
 * two, the next run reads the same rows again and the merge leaves them unchanged.
 */
export async function incrementalLoad(options: IncrementalOptions): Promise<IncrementalSummary> {
  const { store, context } = options;
  const before = await store.get(context.pipelineId, context.taskId);
  const since = before === null ? null : subtractLookback(before, options.lookback);
  const result = await mergeByKey({ ...options, source: options.source(since), whenMissingFromSource: "keep", watermarkColumn: options.watermarkColumn }, "incremental");
  const seen = result.stagedMaximum ?? null;
  const rewritesOldIntervals = context.trigger === "backfill" || context.trigger === "restate";
  const move = !rewritesOldIntervals && options.moveWatermark !== false && seen !== null && (before === null || compareWatermarks(seen, before) > 0);
  if (move) {
    await store.save(context.pipelineId, context.taskId, seen);
    await options.onStep?.("watermarked", { table: options.table });
  }
  return { ...result, readSince: since, watermarkBefore: before, watermarkAfter: move ? seen : before };
}
