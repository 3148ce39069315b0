import { DefinitionError } from "../../core/model/errors.ts";
import { incrementalRead, type IncrementalRead } from "../../core/policy/incremental-reads.ts";
import type { RunTrigger, WriteContext } from "../context.ts";
import type { Source } from "../sources/source.ts";
import { compareWatermarks, intervalWindow, subtractLookback, type Watermark, type WatermarkRange, type WatermarkStore } from "../watermark.ts";
import { mergeByKey, type MergeByKeyOptions, type MergeSummary } from "./merge.ts";

export interface IncrementalOptions extends Omit<MergeByKeyOptions, "source" | "whenMissingFromSource" | "watermarkColumn" | "context"> {
  /**
   * Who is writing, with the run's trigger and interval: `writeContextFrom(ctx)`. The loader reads
   * the trigger itself, so a manual run, a backfill or a restatement reads its own interval and
   * never moves the watermark; a context built by hand must say `trigger` (null outside idem) or
   * it does not type-check.
   */
  context: WriteContext & { trigger: RunTrigger | null };
  /**
   * The source of rows with `since < value` (everything when null) and `value < until` (no upper
   * bound when null: scheduled runs read everything newer than the watermark).
   */
  source: (since: Watermark | null, until: Watermark | null) => Source;
  /** The column whose maximum over the staged rows becomes the next watermark. */
  watermarkColumn: string;
  /** How far before the saved watermark (or the interval's start) to read again, for rows that arrive late. */
  lookback?: number | string;
  store: WatermarkStore;
  /** Set false to load without moving the watermark in any run. */
  moveWatermark?: boolean;
}

export interface IncrementalSummary extends MergeSummary {
  /** "window": the run's interval was read; "stream": rows newer than the watermark. */
  read: "stream" | "window";
  readSince: Watermark | null;
  readUntil: Watermark | null;
  watermarkBefore: Watermark | null;
  watermarkAfter: Watermark | null;
}

/**
 * Reads rows newer than the saved watermark minus the lookback (scheduled runs) or the run's
 * interval (manual runs, backfills, restatements: core/policy/incremental-reads.ts), merges them
 * by key, and only after that commit saves the new watermark, which never moves backwards and
 * only in scheduled runs. Killed between the two, the next run reads the same rows again and the
 * merge leaves them unchanged.
 */
export async function incrementalLoad(options: IncrementalOptions): Promise<IncrementalSummary> {
  const { store, context } = options;
  const before = await store.get(context.pipelineId, context.taskId);
  const kind = incrementalRead(context.trigger);
  const range = rangeToRead(options, kind, before);
  const result = await mergeByKey({ ...options, source: options.source(range.since, range.until), whenMissingFromSource: "keep", watermarkColumn: options.watermarkColumn }, "incremental");
  const seen = result.stagedMaximum ?? null;
  const move = kind !== "window" && options.moveWatermark !== false && seen !== null && (before === null || compareWatermarks(seen, before) > 0);
  if (move) {
    await store.save(context.pipelineId, context.taskId, seen);
    await options.onStep?.("watermarked", { table: options.table });
  }
  return { ...result, read: kind === "window" ? "window" : "stream", readSince: range.since, readUntil: range.until, watermarkBefore: before, watermarkAfter: move ? seen : before };
}

function rangeToRead(options: IncrementalOptions, kind: IncrementalRead, before: Watermark | null): WatermarkRange {
  const { context, lookback } = options;
  const numeric = typeof lookback === "number" || typeof before === "number";
  const stream: WatermarkRange = { since: before === null ? null : subtractLookback(before, lookback), until: null };
  if (kind === "unknown") return stream;
  if (kind === "stream" && (context.tryNumber <= 1 || before === null || numeric)) return stream;
  if (kind === "window" && numeric) {
    // A numeric watermark (an id, a version) says nothing about time, so no interval can be
    // selected by it: read everything, which the merge makes harmless.
    return { since: null, until: null };
  }
  if (!context.interval) {
    throw new DefinitionError(`${options.table}: a ${context.trigger} run of an incremental load reads its interval, and the write context has none; build it with writeContextFrom(ctx)`);
  }
  const window = intervalWindow(context.interval, lookback, before);
  if (kind === "window") return window;
  // A later try of a scheduled run: its own interval and everything newer.
  return { since: compareWatermarks(window.since!, stream.since!) < 0 ? window.since : stream.since, until: null };
}
