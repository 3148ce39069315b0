import { describeFrozen, frozenPeriodOf, type FrozenPeriod } from "../../core/policy/frozen.ts";
import { runIdFor } from "../../core/model/run-id.ts";
import type { Pipeline } from "../../core/pipeline/types.ts";
import { startOfDay, addDays, formatInstant } from "../../core/time/dates.ts";
import { manualRunTooEarly } from "../../core/policy/manual-run.ts";
import type { NewBackfillItem, RunRecord } from "../../store/port.ts";

export type Reprocess = "none" | "failed" | "all";

/** How a refusal of a date whose interval has not ended begins; the rest names its end. */
export const IN_THE_FUTURE = "in the future";

export interface PlanInput {
  pipeline: Pipeline;
  /** First and last business date, inclusive. */
  from: string;
  to: string;
  reprocess: Reprocess;
  backwards: boolean;
  now: number;
  /** Existing runs of the pipeline whose interval starts in the range. */
  runs: readonly RunRecord[];
  frozen: readonly FrozenPeriod[];
  /** Frozen dates may be rewritten when this reason is given (recorded with the backfill). */
  openFrozen?: string;
}

/**
 * Every interval in the range with what the backfill will do to it and why: create (missing),
 * rerun (per --reprocess), leave (already done), refuse (frozen, before start, in the
 * future: not ended, core's `manualRunTooEarly` as for every manual run; a run already active). Pure: the caller fetches the runs and reads the clock.
 */
export function planBackfill(input: PlanInput): NewBackfillItem[] {
  const { pipeline, now } = input;
  const tz = pipeline.schedule.timezone;
  const intervals = pipeline.schedule.intervalsBetween(startOfDay(input.from, tz), startOfDay(addDays(input.to, 1), tz));
  const byInterval = new Map(input.runs.map((r) => [`${r.intervalStart}/${r.intervalEnd}`, r]));
  const items = intervals.map((interval): NewBackfillItem => {
    const base = {
      businessDate: interval.businessDate,
      intervalStart: interval.start,
      intervalEnd: interval.end,
      runId: runIdFor(pipeline.id, interval),
    };
    const refuse = (why: string) => ({ ...base, action: "refuse" as const, why });
    if (pipeline.start !== null && interval.start < pipeline.start) return refuse("before the pipeline's start");
    if (pipeline.end !== null && interval.start >= pipeline.end) return refuse("after the pipeline's end");
    const tooEarly = manualRunTooEarly(pipeline.schedule, interval, now, pipeline.start);
    if (tooEarly) return refuse(`${IN_THE_FUTURE}: its interval ends at ${formatInstant(tooEarly.endsAt, tz)}`);
    const frozen = frozenPeriodOf(input.frozen, interval.businessDate);
    if (frozen && !input.openFrozen) return refuse(describeFrozen(frozen));
    const opened = frozen ? ` (${describeFrozen(frozen)}; opened: ${input.openFrozen})` : "";
    const run = byInterval.get(`${interval.start}/${interval.end}`);
    if (!run) return { ...base, action: "create", why: `missing${opened}` };
    if (run.runId !== base.runId) base.runId = run.runId;
    if (run.state === "queued" || run.state === "running") return refuse(`run ${run.runId} is already ${run.state}`);
    if (run.state === "failed") {
      return input.reprocess === "none"
        ? { ...base, action: "leave", why: 'failed before; reprocess "failed" or "all" runs it again' }
        : { ...base, action: "rerun", why: `failed before${opened}` };
    }
    return input.reprocess === "all"
      ? { ...base, action: "rerun", why: `succeeded before; reprocess "all"${opened}` }
      : { ...base, action: "leave", why: "already succeeded" };
  });
  return input.backwards ? items.reverse() : items;
}

/** Dates of a plan that share one reason, as a range: what an audit entry lists. */
export interface DateRangeWhy {
  from: string;
  to: string;
  why: string;
}

/**
 * The plan's items that `pick` selects, in business-date order, with neighbours (in the plan) of
 * the same reason merged into one range: a refused frozen month is one line, not thirty.
 */
export function rangesOf<Item extends NewBackfillItem>(items: readonly Item[], pick: (item: Item) => string | null): DateRangeWhy[] {
  const ranges: DateRangeWhy[] = [];
  let open: DateRangeWhy | null = null;
  for (const item of [...items].sort((a, b) => a.intervalStart - b.intervalStart)) {
    const why = pick(item);
    if (why === null) {
      open = null;
      continue;
    }
    if (open && open.why === why) open.to = item.businessDate;
    else ranges.push((open = { from: item.businessDate, to: item.businessDate, why }));
  }
  return ranges;
}
