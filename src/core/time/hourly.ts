import { BaseTimetable, checkOptions, optionalZone, parseIntegerOption } from "./base.ts";
import type { Timetable } from "./base.ts";
import { toZoned } from "./dates.ts";
import type { Interval } from "./interval.ts";

const HOUR = 3_600_000;

/** Remainder with the sign of the divisor, so instants before 1970 align too. */
function mod(a: number, m: number): number {
  return ((a % m) + m) % m;
}

/**
 * Boundaries are exactly the instants whose local time reads HH:00:00.000, each occurrence
 * counted. So a repeated hour (25-hour day) yields two intervals, a skipped one (23-hour day)
 * none, and an interval is one hour of real time whenever the zone shifts by whole hours. Found
 * arithmetically within each stretch of constant UTC offset rather than by rounding the wall
 * clock: rounding picks the wrong HH:00 where a zone falls back by a part of an hour across one
 * (America/St_Johns 2010, Pacific/Chatham's 45-minute offsets).
 */
class HourlyTimetable extends BaseTimetable {
  readonly kind = "hourly";
  constructor(timezone: string, readonly minute: number) {
    super(timezone);
  }

  private offsetAt(ms: number): number {
    return Math.round(toZoned(ms, this.timezone).offsetNanoseconds / 1e6);
  }

  protected floor(t: number): number {
    for (let x = t; ; ) {
      const aligned = x - mod(x + this.offsetAt(x), HOUR);
      if (aligned === x) return x;
      // The offset only holds back to the last change at or before x; an HH:00 computed with
      // it from before that change is not one.
      const change = toZoned(x + 1, this.timezone).getTimeZoneTransition("previous");
      if (change === null || aligned >= change.epochMilliseconds) return aligned;
      x = change.epochMilliseconds - 1;
    }
  }

  /** The earliest boundary >= x. */
  private atOrAfter(x: number): number {
    for (;;) {
      const aligned = x + mod(-(x + this.offsetAt(x)), HOUR);
      if (aligned === x) return x;
      const change = toZoned(x, this.timezone).getTimeZoneTransition("next");
      if (change === null || aligned < change.epochMilliseconds) return aligned;
      x = change.epochMilliseconds;
    }
  }

  protected next(boundary: number): number {
    return this.atOrAfter(boundary + 1);
  }

  firesAt(interval: Interval): number {
    return interval.end + this.minute * 60_000;
  }
  toJSON() {
    return { kind: this.kind, minute: this.minute, timezone: this.timezone };
  }
  describe(): string {
    return `hourly at :${String(this.minute).padStart(2, "0")} ${this.timezone}`;
  }
}

export interface HourlyOptions {
  /** Minutes after the hour ends that it fires, 0..59; default 0. */
  minute?: number;
  timezone?: string;
}

/** Interval = one local wall-clock hour [H:00, H+1:00); fires `minute` minutes after it ends. */
export function hourly(opts: HourlyOptions = {}): Timetable {
  const o = checkOptions("hourly", opts, ["minute", "timezone"]);
  return new HourlyTimetable(optionalZone(o.timezone), parseIntegerOption(o.minute, "minute", 0, 59, 0));
}
