import { Temporal } from "temporal-polyfill";
import { DefinitionError } from "../model/errors.ts";
import { assertTimeZone, parseBusinessDate, startOfDay } from "./dates.ts";
import { describeInterval, makeInterval } from "./interval.ts";
import type { Interval } from "./interval.ts";

/**
 * A date names no interval of a schedule that starts several on it (hourly, every 6 hours): the
 * caller asks for one by its start and end instead. The engine says so with its argument names.
 */
export class SeveralIntervalsOnDate extends DefinitionError {
  readonly schedule: string;
  /** How many start on the date ("more than 10000" past the cap). */
  readonly count: string;
  constructor(schedule: string, count: string, businessDate: string) {
    super(`${schedule}: ${count} intervals start on ${businessDate}; name one by its start and end instead of a date`);
    this.schedule = schedule;
    this.count = count;
  }
}

/**
 * How a fire time at a wall-clock time that does not exist (spring gap) or exists twice (autumn
 * overlap) is resolved, with Temporal's disambiguation semantics. "compatible": gap -> shift
 * forward, overlap -> first occurrence. Interval boundaries never depend on it.
 */
export type DstPolicy = "compatible" | "earlier" | "later";

export type TimetableKind = "daily" | "hourly" | "weekly" | "monthly" | "cron" | "manual";

export interface Due {
  interval: Interval;
  firesAt: number;
}

export interface Timetable {
  readonly kind: TimetableKind;
  readonly timezone: string;
  /** Plain JSON that fully describes the schedule (used in a stable hash of the pipeline). */
  toJSON(): Record<string, unknown>;
  /** e.g. "daily at 02:00 Europe/London" */
  describe(): string;
  /**
   * The interval whose start falls on local date D. Throws DefinitionError when none or several
   * intervals start on D. For manual: the calendar day.
   */
  intervalForDate(businessDate: string): Interval;
  /** The interval containing the instant (start <= t < end). */
  intervalAt(t: number): Interval;
  /** When the interval becomes eligible to run; never before its end. manual: Infinity. */
  firesAt(interval: Interval): number;
  /** The first interval (earliest start) whose firesAt > t. null for manual. */
  nextDue(t: number): Due | null;
  /** Intervals with from <= start < to, in order. */
  intervalsBetween(from: number, to: number): Interval[];
  /** Every interval with start >= from and firesAt <= now, oldest first, at most `limit`. manual: []. */
  dueBetween(from: number, now: number, limit?: number): Due[];
  /** The next n fires strictly after t. manual: []. */
  preview(t: number, n: number): Due[];
}

export function assertInstant(t: number, what: string): void {
  if (typeof t !== "number" || !Number.isFinite(t)) {
    throw new RangeError(`${what} must be a finite epoch-ms number, got ${String(t)}`);
  }
}

function assertCount(n: number, what: string): void {
  if (!(Number.isInteger(n) && n >= 0) && n !== Infinity) {
    throw new RangeError(`${what} must be a non-negative integer, got ${String(n)}`);
  }
}

// Counting every interval of a busy cron on one day (86,400 for "* * * * * *") buys nothing
// for an error message.
const COUNT_CAP = 1000;

/**
 * Everything a timetable does, derived from two primitives over its set of interval boundaries:
 * floor(t), the latest boundary <= t, and next(b), the earliest boundary > b. Because both read the
 * same set, the intervals tile time with no gap and no overlap however odd the zone rules are.
 * Subclasses also promise that firesAt is strictly increasing along the intervals and never before
 * an interval's end, which is what makes nextDue and dueBetween simple walks.
 */
export abstract class BaseTimetable implements Timetable {
  abstract readonly kind: TimetableKind;
  readonly timezone: string;

  constructor(timezone: string) {
    this.timezone = timezone;
  }

  protected abstract floor(t: number): number;
  protected abstract next(boundary: number): number;
  abstract firesAt(interval: Interval): number;
  abstract toJSON(): Record<string, unknown>;
  abstract describe(): string;

  /** How error messages name this schedule, e.g. "hourly schedule". */
  protected label(): string {
    return `${this.kind} schedule`;
  }

  private make(start: number): Interval {
    return makeInterval(start, this.next(start), this.timezone);
  }

  /** The earliest boundary >= t. */
  private ceil(t: number): number {
    const b = this.floor(t);
    return b < t ? this.next(b) : b;
  }

  intervalAt(t: number): Interval {
    assertInstant(t, "intervalAt(t)");
    return this.make(this.floor(t));
  }

  intervalForDate(businessDate: string): Interval {
    parseBusinessDate(businessDate);
    const day = Temporal.PlainDate.from(businessDate);
    const from = startOfDay(day, this.timezone);
    const to = startOfDay(day.add({ days: 1 }), this.timezone);
    const found: Interval[] = [];
    for (let b = this.ceil(from); b < to && found.length <= COUNT_CAP; ) {
      const i = this.make(b);
      found.push(i);
      b = i.end;
    }
    if (found.length === 1) return found[0]!;
    if (found.length > 1) {
      const n = found.length > COUNT_CAP ? `more than ${COUNT_CAP}` : String(found.length);
      throw new SeveralIntervalsOnDate(this.label(), n, businessDate);
    }
    if (from === to) {
      throw new DefinitionError(`${this.label()}: no interval starts on ${businessDate}, a date ${this.timezone} skipped`);
    }
    const containing = this.intervalAt(from);
    throw new DefinitionError(
      `${this.label()}: no interval starts on ${businessDate}; the one containing it is ${describeInterval(containing)} (business date ${containing.businessDate})`,
    );
  }

  intervalsBetween(from: number, to: number): Interval[] {
    assertInstant(from, "intervalsBetween(from)");
    assertInstant(to, "intervalsBetween(to)");
    const out: Interval[] = [];
    for (let b = this.ceil(from); b < to; ) {
      const i = this.make(b);
      out.push(i);
      b = i.end;
    }
    return out;
  }

  nextDue(t: number): Due | null {
    assertInstant(t, "nextDue(t)");
    // The interval containing t ends after t, so it fires after t; an earlier one may too (a daily
    // interval still waiting for its 06:00). Fire delays are bounded, so this walks back a step or two.
    let due = this.intervalAt(t);
    for (;;) {
      const before = this.make(this.floor(due.start - 1));
      if (this.firesAt(before) <= t) break;
      due = before;
    }
    return { interval: due, firesAt: this.firesAt(due) };
  }

  dueBetween(from: number, now: number, limit = Infinity): Due[] {
    assertInstant(from, "dueBetween(from)");
    assertInstant(now, "dueBetween(now)");
    assertCount(limit, "dueBetween(limit)");
    const out: Due[] = [];
    for (let b = this.ceil(from); out.length < limit; ) {
      const interval = this.make(b);
      const firesAt = this.firesAt(interval);
      if (firesAt > now) break;
      out.push({ interval, firesAt });
      b = interval.end;
    }
    return out;
  }

  preview(t: number, n: number): Due[] {
    assertInstant(t, "preview(t)");
    assertCount(n, "preview(n)");
    const out: Due[] = [];
    if (n === 0) return out;
    let due = this.nextDue(t);
    while (due && out.length < n) {
      out.push(due);
      const interval = this.make(due.interval.end);
      due = { interval, firesAt: this.firesAt(interval) };
    }
    return out;
  }
}

// ---- option parsing shared by the factories ----

export function checkOptions(kind: string, opts: unknown, allowed: readonly string[]): Record<string, unknown> {
  if (opts === undefined || opts === null) return {};
  if (typeof opts !== "object" || Array.isArray(opts)) {
    throw new DefinitionError(`${kind}: options must be an object, got ${JSON.stringify(opts)}`);
  }
  for (const key of Object.keys(opts)) {
    if (!allowed.includes(key)) {
      throw new DefinitionError(`${kind}: unknown option "${key}" (expected ${allowed.join(", ")})`);
    }
  }
  return opts as Record<string, unknown>;
}

export function optionalZone(tz: unknown): string {
  return tz === undefined ? "UTC" : assertTimeZone(tz as string);
}

export interface TimeOfDay {
  hour: number;
  minute: number;
  text: string;
}

export function parseTimeOfDay(at: unknown): TimeOfDay {
  if (at === undefined) return { hour: 0, minute: 0, text: "00:00" };
  const m = typeof at === "string" ? /^(\d{2}):(\d{2})$/.exec(at) : null;
  const hour = Number(m?.[1]);
  const minute = Number(m?.[2]);
  if (!m || hour > 23 || minute > 59) {
    throw new DefinitionError(`bad time ${typeof at === "string" ? JSON.stringify(at) : String(at)} (expected HH:MM)`);
  }
  return { hour, minute, text: at as string };
}

const DST_POLICIES: readonly DstPolicy[] = ["compatible", "earlier", "later"];

export function parseDstPolicy(dst: unknown): DstPolicy {
  if (dst === undefined) return "compatible";
  if (DST_POLICIES.includes(dst as DstPolicy)) return dst as DstPolicy;
  throw new DefinitionError(`bad dst policy ${JSON.stringify(dst)} (expected compatible, earlier or later)`);
}

export function parseIntegerOption(value: unknown, name: string, min: number, max: number, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value === "number" && Number.isInteger(value) && value >= min && value <= max) return value;
  throw new DefinitionError(`bad ${name} ${JSON.stringify(value)} (expected an integer ${min}..${max})`);
}

/**
 * The fire instant at local `at` on `date`, resolved under the DST policy, but never before
 * `notBefore` (the interval's end): with "earlier", a fire time in the gap right after a
 * midnight could otherwise land inside the interval it is meant to close.
 */
export function fireAt(date: Temporal.PlainDate, at: TimeOfDay, timezone: string, dst: DstPolicy, notBefore: number): number {
  const ms = date
    .toPlainDateTime({ hour: at.hour, minute: at.minute })
    .toZonedDateTime(timezone, { disambiguation: dst }).epochMilliseconds;
  return Math.max(ms, notBefore);
}
