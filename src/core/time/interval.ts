import { formatLocal, localDate, toZoned } from "./dates.ts";

/**
 * The half-open period [start, end) a run is responsible for, in epoch ms. `businessDate` is the
 * local date of `start` in `timezone`: the name task code and users see.
 */
export interface Interval {
  start: number;
  end: number;
  businessDate: string;
  timezone: string;
}

export function makeInterval(start: number, end: number, timezone: string): Interval {
  return { start, end, businessDate: localDate(start, timezone), timezone };
}

export function intervalContains(i: Interval, t: number): boolean {
  return i.start <= t && t < i.end;
}

function isoWithOffset(ms: number, timezone: string): string {
  return toZoned(ms, timezone).toString({ timeZoneName: "never" });
}

/**
 * "2026-09-01T00:00:00+01:00/2026-09-02T00:00:00+01:00". The offset makes each instant
 * unambiguous (the two 01:00s of a 25-hour day differ), so the key is unique per interval and
 * depends on nothing but the interval itself.
 */
export function intervalKey(i: Interval): string {
  return `${isoWithOffset(i.start, i.timezone)}/${isoWithOffset(i.end, i.timezone)}`;
}

/** "[2026-09-01 00:00, 2026-09-02 00:00) Europe/London" */
export function describeInterval(i: Interval): string {
  return `[${formatLocal(i.start, i.timezone)}, ${formatLocal(i.end, i.timezone)}) ${i.timezone}`;
}
