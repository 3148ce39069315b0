import { Temporal } from "temporal-polyfill";
import { DefinitionError } from "../model/errors.ts";
import { startOfDay, toZoned } from "./dates.ts";
import {
  BaseTimetable,
  checkOptions,
  fireAt,
  optionalZone,
  parseDstPolicy,
  parseIntegerOption,
  parseTimeOfDay,
} from "./base.ts";
import type { Due, DstPolicy, TimeOfDay, Timetable } from "./base.ts";
import type { Interval } from "./interval.ts";

function dateOf(ms: number, timezone: string): Temporal.PlainDate {
  return toZoned(ms, timezone).toPlainDate();
}

function dstSuffix(dst: DstPolicy): string {
  return dst === "compatible" ? "" : ` (dst: ${dst})`;
}

/**
 * Boundaries at the start of calendar periods (days, weeks, months) in the zone. Starts come from
 * Temporal's start of day, so a day whose midnight falls in a DST gap starts at 01:00 and a date
 * the zone skipped has no interval.
 */
abstract class PeriodTimetable extends BaseTimetable {
  /** The first date of the period containing `date`. */
  protected abstract periodOf(date: Temporal.PlainDate): Temporal.PlainDate;
  /** The first date of the period after the one starting on `first`. */
  protected abstract after(first: Temporal.PlainDate): Temporal.PlainDate;

  protected floor(t: number): number {
    // The period of t's local date starts at or before t, but a later one may too: where a zone
    // falls back across midnight (America/St_Johns at 00:01 in 2010) the local date runs
    // backwards for a while, after the next day has already begun.
    let first = this.periodOf(dateOf(t, this.timezone));
    let start = startOfDay(first, this.timezone);
    for (;;) {
      const following = this.after(first);
      const next = startOfDay(following, this.timezone);
      if (next > t) return start;
      first = following;
      start = next;
    }
  }

  protected next(boundary: number): number {
    return startOfDay(this.after(this.periodOf(dateOf(boundary, this.timezone))), this.timezone);
  }
}

abstract class DayTimetable extends PeriodTimetable {
  protected periodOf(date: Temporal.PlainDate): Temporal.PlainDate {
    return date;
  }
  protected after(first: Temporal.PlainDate): Temporal.PlainDate {
    return first.add({ days: 1 });
  }
}

class DailyTimetable extends DayTimetable {
  readonly kind = "daily";
  constructor(timezone: string, readonly at: TimeOfDay, readonly dst: DstPolicy) {
    super(timezone);
  }
  firesAt(interval: Interval): number {
    // The local date of the end is D+1, except after a skipped date, where D+1 does not exist.
    return fireAt(dateOf(interval.end, this.timezone), this.at, this.timezone, this.dst, interval.end);
  }
  toJSON() {
    return { kind: this.kind, at: this.at.text, timezone: this.timezone, dst: this.dst };
  }
  describe(): string {
    return `daily at ${this.at.text} ${this.timezone}${dstSuffix(this.dst)}`;
  }
}

class ManualTimetable extends DayTimetable {
  readonly kind = "manual";
  firesAt(): number {
    return Infinity;
  }
  override nextDue(): Due | null {
    return null;
  }
  override dueBetween(): Due[] {
    return [];
  }
  override preview(): Due[] {
    return [];
  }
  toJSON() {
    return { kind: this.kind, timezone: this.timezone };
  }
  describe(): string {
    return `manual (${this.timezone})`;
  }
}

export const WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"] as const;
export type Weekday = (typeof WEEKDAYS)[number];

class WeeklyTimetable extends PeriodTimetable {
  readonly kind = "weekly";
  private readonly isoDay: number;
  constructor(timezone: string, readonly on: Weekday, readonly at: TimeOfDay, readonly dst: DstPolicy) {
    super(timezone);
    this.isoDay = WEEKDAYS.indexOf(on) + 1;
  }
  protected periodOf(date: Temporal.PlainDate): Temporal.PlainDate {
    return date.subtract({ days: (date.dayOfWeek - this.isoDay + 7) % 7 });
  }
  protected after(first: Temporal.PlainDate): Temporal.PlainDate {
    return first.add({ days: 7 });
  }
  firesAt(interval: Interval): number {
    return fireAt(dateOf(interval.end, this.timezone), this.at, this.timezone, this.dst, interval.end);
  }
  protected override label(): string {
    return `weekly schedule (weeks start on ${this.on})`;
  }
  toJSON() {
    return { kind: this.kind, on: this.on, at: this.at.text, timezone: this.timezone, dst: this.dst };
  }
  describe(): string {
    return `weekly on ${this.on} at ${this.at.text} ${this.timezone}${dstSuffix(this.dst)}`;
  }
}

class MonthlyTimetable extends PeriodTimetable {
  readonly kind = "monthly";
  constructor(timezone: string, readonly day: number, readonly at: TimeOfDay, readonly dst: DstPolicy) {
    super(timezone);
  }
  protected periodOf(date: Temporal.PlainDate): Temporal.PlainDate {
    return date.with({ day: 1 });
  }
  protected after(first: Temporal.PlainDate): Temporal.PlainDate {
    return first.add({ months: 1 });
  }
  firesAt(interval: Interval): number {
    const date = dateOf(interval.end, this.timezone).with({ day: this.day });
    return fireAt(date, this.at, this.timezone, this.dst, interval.end);
  }
  toJSON() {
    return { kind: this.kind, day: this.day, at: this.at.text, timezone: this.timezone, dst: this.dst };
  }
  describe(): string {
    return `monthly on day ${this.day} at ${this.at.text} ${this.timezone}${dstSuffix(this.dst)}`;
  }
}

export interface DailyOptions {
  /** "HH:MM" local time on D+1 when day D becomes due; default "00:00". */
  at?: string;
  timezone?: string;
  dst?: DstPolicy;
}

/** Interval = local calendar day [D 00:00, D+1 00:00); fires at D+1 `at`. */
export function daily(opts: DailyOptions = {}): Timetable {
  const o = checkOptions("daily", opts, ["at", "timezone", "dst"]);
  return new DailyTimetable(optionalZone(o.timezone), parseTimeOfDay(o.at), parseDstPolicy(o.dst));
}

export interface WeeklyOptions {
  /** The first day of each week, and the day the previous week fires; default "monday". */
  on?: Weekday;
  at?: string;
  timezone?: string;
  dst?: DstPolicy;
}

/** Interval = [week start 00:00, next week start 00:00); fires at `at` on the next week's first day. */
export function weekly(opts: WeeklyOptions = {}): Timetable {
  const o = checkOptions("weekly", opts, ["on", "at", "timezone", "dst"]);
  const on = o.on === undefined ? "monday" : typeof o.on === "string" ? o.on.toLowerCase() : o.on;
  if (!WEEKDAYS.includes(on as Weekday)) {
    throw new DefinitionError(`bad weekday ${JSON.stringify(o.on)} (expected ${WEEKDAYS.join(", ")})`);
  }
  return new WeeklyTimetable(optionalZone(o.timezone), on as Weekday, parseTimeOfDay(o.at), parseDstPolicy(o.dst));
}

export interface MonthlyOptions {
  /** Day of the following month it fires, 1..28 so that every month has it; default 1. */
  day?: number;
  at?: string;
  timezone?: string;
  dst?: DstPolicy;
}

/** Interval = local calendar month; fires on `day` of the following month at `at`. */
export function monthly(opts: MonthlyOptions = {}): Timetable {
  const o = checkOptions("monthly", opts, ["day", "at", "timezone", "dst"]);
  const day = parseIntegerOption(o.day, "day", 1, 28, 1);
  return new MonthlyTimetable(optionalZone(o.timezone), day, parseTimeOfDay(o.at), parseDstPolicy(o.dst));
}

/** Runs only when asked; its intervals are calendar days so a date still names one. */
export function manual(opts: { timezone?: string } = {}): Timetable {
  const o = checkOptions("manual", opts, ["timezone"]);
  return new ManualTimetable(optionalZone(o.timezone));
}
