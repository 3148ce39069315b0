import { IntervalNotEndedError } from "../core/model/errors.ts";
import { manualRunTooEarly } from "../core/policy/manual-run.ts";
import type { Pipeline } from "../core/pipeline/types.ts";
import { formatInstant } from "../core/time/dates.ts";
import { describeInterval, type Interval } from "../core/time/interval.ts";
import { intervalName, namesDate } from "../core/time/interval-name.ts";

/**
 * Refuses an operator's run of an interval that has not ended (core's `manualRunTooEarly`), in
 * one line: the date, when its interval ends, and the newest date that can run now. Every path
 * that makes a manual run calls it: `idem run`, trigger (CLI, API, UI).
 */
export function assertIntervalEnded(pipeline: Pipeline, interval: Interval, now: number): void {
  const refusal = manualRunTooEarly(pipeline.schedule, interval, now, pipeline.start);
  if (!refusal) return;
  const tz = pipeline.schedule.timezone;
  const newest = refusal.newestEnded;
  const runnable = newest === null
    ? "none of its intervals has ended yet"
    : `the newest ${namesDate(pipeline.schedule, newest) ? `date that can run now is ${newest.businessDate}` : `interval that can run now is ${describeInterval(newest)}`}`;
  throw new IntervalNotEndedError(
    `${intervalName(pipeline.schedule, interval)} has not ended: its interval ends at ${formatInstant(refusal.endsAt, tz)}; ${runnable}`,
    { pipeline: pipeline.id },
  );
}
