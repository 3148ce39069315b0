import { BaseTimetable, checkOptions, optionalZone, parseIntegerOption } from "./base.ts";
import type { Timetable } from "./base.ts";
import { toZoned } from "./dates.ts";
import type { Interval } from "./interval.ts";

const HOUR = 3_600_000;

/**
 * Boundaries at each local HH:00. Flooring the wall clock keeps the instant's own offset, so the
 * repeated hour of a 25-hour day yields two intervals and the skipped hour of a 23-hour day none.
 */
class HourlyTimetable extends BaseTimetable {
  readonly kind = "hourly";
  constructor(timezone: string, readonly minute: number) {
    super(timezone);
  }

  protected floor(t: number): number {
    const z = toZoned(t, this.timezone);
    const b = z.round({ smallestUnit: "hour", roundingMode: "floor" }).epochMilliseconds;
    if (b <= t) return b;
    // HH:00 fell in a DST gap that ends off the hour (a few zones shift by 30 minutes or at odd
    // times), and Temporal pushed it past t. The clock jump itself is then the boundary.
    return toZoned(t + 1, this.timezone).getTimeZoneTransition("previous")!.epochMilliseconds;
  }

  protected next(boundary: number): number {
    // The next boundary is usually an hour away; around odd DST shifts it can be nearer or
    // farther, so take the first hour mark past `boundary` and step down to the earliest one.
    for (let probe = boundary + HOUR; ; probe += HOUR) {
      let b = this.floor(probe);
      if (b <= boundary) continue;
      for (let lower = this.floor(b - 1); lower > boundary; lower = this.floor(b - 1)) b = lower;
      return b;
    }
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
