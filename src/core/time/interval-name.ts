import type { Timetable } from "./base.ts";
import { describeInterval, type Interval } from "./interval.ts";

/** Whether the interval's business date names it (it is the one interval starting on that date), so a date is enough to ask for it. */
export function namesDate(schedule: Timetable, interval: Interval): boolean {
  try {
    const named = schedule.intervalForDate(interval.businessDate);
    return named.start === interval.start && named.end === interval.end;
  } catch {
    return false;
  }
}

/** How people name an interval: its business date when that names it, else its bounds. */
export function intervalName(schedule: Timetable, interval: Interval): string {
  return namesDate(schedule, interval) ? interval.businessDate : describeInterval(interval);
}
