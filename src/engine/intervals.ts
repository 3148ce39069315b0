import { ArgumentError, UsageError } from "../core/model/errors.ts";
import type { Pipeline } from "../core/pipeline/types.ts";
import { parseBusinessDate, parseInstant } from "../core/time/dates.ts";
import type { Interval } from "../core/time/interval.ts";
import { SeveralIntervalsOnDate } from "../core/time/base.ts";
import type { Due } from "../core/time/timetable.ts";

/** The interval a business date names under the pipeline's schedule. */
export function intervalForDate(pipeline: Pipeline, date: string): Interval {
  let businessDate: string;
  try {
    businessDate = parseBusinessDate(date);
  } catch (error) {
    throw new ArgumentError("date", () => (error as Error).message, { pipeline: pipeline.id });
  }
  try {
    return pipeline.schedule.intervalForDate(businessDate);
  } catch (error) {
    if (error instanceof SeveralIntervalsOnDate) {
      const { schedule, count } = error;
      throw new ArgumentError("date", (n) => `${schedule}: ${count} intervals start on ${businessDate}; give ${n("start")} and ${n("end")} instead of ${n("date")}`, { pipeline: pipeline.id });
    }
    throw new ArgumentError("date", () => (error as Error).message, { pipeline: pipeline.id });
  }
}

/** An interval given by its bounds (for schedules that are not daily). */
export function intervalBetween(pipeline: Pipeline, start: string, end: string): Interval {
  const tz = pipeline.schedule.timezone;
  let startMs: number;
  let endMs: number;
  try {
    startMs = parseInstant(start, tz);
    endMs = parseInstant(end, tz);
  } catch (error) {
    throw new UsageError((error as Error).message, { pipeline: pipeline.id });
  }
  if (endMs <= startMs) throw new ArgumentError("end", (n) => `${n("end")} ${end} is not after ${n("start")} ${start}`, { pipeline: pipeline.id });
  const atStart = pipeline.schedule.intervalAt(startMs);
  if (pipeline.schedule.kind !== "manual" && (atStart.start !== startMs || atStart.end !== endMs)) {
    throw new UsageError(
      `${start}..${end} is not an interval of the schedule (${pipeline.schedule.describe()}); the interval there is ` +
        `${new Date(atStart.start).toISOString()}..${new Date(atStart.end).toISOString()}`,
      { pipeline: pipeline.id },
    );
  }
  return { ...atStart, start: startMs, end: endMs };
}

/** Refuses an interval outside the pipeline's start and end: the pipeline owns no run there. */
export function assertOwned(pipeline: Pipeline, interval: Interval): void {
  if (pipeline.start !== null && interval.start < pipeline.start) {
    throw new UsageError(`${interval.businessDate} is before the pipeline's start (${pipeline.definition.start === null ? "" : new Date(pipeline.start).toISOString()})`, { pipeline: pipeline.id });
  }
  if (pipeline.end !== null && interval.start >= pipeline.end) {
    throw new UsageError(`${interval.businessDate} is after the pipeline's end`, { pipeline: pipeline.id });
  }
}

/** The next `count` intervals the schedule will fire after `now`, within the pipeline's start and end. */
export function upcoming(pipeline: Pipeline, now: number, count: number): Due[] {
  const from = Math.max(now, pipeline.start === null ? -Infinity : pipeline.start - 1);
  // The interval containing start - 1 ends after start: it fires after `from`, but is not owned.
  const owned = (d: Due) => (pipeline.start === null || d.interval.start >= pipeline.start) && (pipeline.end === null || d.interval.start < pipeline.end);
  return pipeline.schedule.preview(from, count + 1).filter(owned).slice(0, count);
}
