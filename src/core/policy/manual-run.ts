import type { Timetable } from "../time/base.ts";
import type { Interval } from "../time/interval.ts";

/** Why a manual run of an interval is refused now: the interval has not ended. */
export interface NotEnded {
  /** When the interval ends: from then on it may run. */
  endsAt: number;
  /** The newest interval that has ended by now, which may run now; null when none has since the pipeline's start. */
  newestEnded: Interval | null;
}

/**
 * Whether an operator's run (one date, a trigger, a backfill's interval) may be made now. There
 * is one run per interval, ever: a run made before its interval ends would be taken by the
 * schedule for that interval's run, and whatever arrives after it would never be loaded. So an
 * interval of a scheduled pipeline may run only once it has ended. A manual-only schedule makes
 * no run of its own for a manual run to take the place of: any interval may run. Null: allowed.
 */
export function manualRunTooEarly(schedule: Timetable, interval: Interval, now: number, pipelineStart: number | null): NotEnded | null {
  if (schedule.kind === "manual" || interval.end <= now) return null;
  // The interval holding `now` has not ended; the one before it ends where it starts.
  const newest = schedule.intervalAt(schedule.intervalAt(now).start - 1);
  return { endsAt: interval.end, newestEnded: pipelineStart !== null && newest.start < pipelineStart ? null : newest };
}
