import { formatLocal, parseInstant } from "../../../src/core/time/index.ts";
import type { Interval } from "../../../src/core/time/index.ts";

/** The instant of a local wall-clock time (or an ISO instant) in a zone. */
export function at(text: string, timezone = "UTC"): number {
  return parseInstant(text, timezone);
}

/** Local wall-clock text of an instant, e.g. "2026-03-08 03:00" (with an offset when it repeats). */
export function local(ms: number, timezone: string): string {
  return formatLocal(ms, timezone);
}

export function hoursLong(i: Interval): number {
  return (i.end - i.start) / 3_600_000;
}

export function span(i: Interval): [string, string] {
  return [local(i.start, i.timezone), local(i.end, i.timezone)];
}

export const HOUR = 3_600_000;
export const DAY = 24 * HOUR;
