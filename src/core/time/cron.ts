import { Cron } from "croner";
import { DefinitionError } from "../model/errors.ts";
import { BaseTimetable, checkOptions, optionalZone } from "./base.ts";
import type { Timetable } from "./base.ts";
import type { Interval } from "./interval.ts";

// A fixed instant to check an expression can fire at all ("0 0 30 2 *" never does). Core never
// reads the clock, and any expression that fires once after 2000 fires again after it.
const PROBE_FROM = Date.UTC(2000, 0, 1);

/**
 * Ticks of a cron expression; the interval is [tick_k, tick_k+1) and it fires at tick_k+1.
 *
 * DST follows croner's rules with fixedTimeRule "no-wildcard" (close to Vixie cron): an
 * expression whose seconds, minutes and hours have no wildcard or step ("30 2 * * *",
 * "0 6,18 * * *") fires once per matching local time: after the gap when the time is skipped, at
 * the first occurrence when it repeats. Others ("*\/30 * * * *") skip times in a gap and fire on both
 * occurrences of a repeated time, like a stopwatch would.
 */
class CronTimetable extends BaseTimetable {
  readonly kind = "cron";
  private readonly job: Cron;
  // nextRun is the hot path (tens of µs each) and every walk asks for the same ticks twice.
  private readonly nextCache = new Map<number, number>();

  constructor(readonly expression: string, timezone: string) {
    super(timezone);
    const bad = (reason: string) => new DefinitionError(`bad cron expression ${JSON.stringify(expression)}: ${reason}`);
    const fields = expression.split(" ");
    // Croner also accepts an ISO date as a one-shot job, which is not a schedule.
    if (!expression.startsWith("@") && fields.length !== 5 && fields.length !== 6) {
      throw bad(`expected 5 fields (minute hour day month weekday) or 6 with seconds first, got ${fields.length}`);
    }
    try {
      this.job = new Cron(expression, { timezone, mode: "5-or-6-parts", fixedTimeRule: "no-wildcard" });
    } catch (e) {
      throw bad(String((e as Error).message ?? e).replace(/^CronPattern: /, ""));
    }
    if (this.job.getPattern() === undefined) throw bad("not a cron pattern");
    if (this.job.nextRun(new Date(PROBE_FROM)) === null) throw bad("it never fires");
  }

  private nextTick(t: number): number {
    const hit = this.nextCache.get(t);
    if (hit !== undefined) return hit;
    const d = this.job.nextRun(new Date(t));
    if (d === null) throw new RangeError(`cron ${JSON.stringify(this.expression)} has no tick after ${new Date(t).toISOString()}`);
    if (this.nextCache.size >= 10_000) this.nextCache.clear();
    this.nextCache.set(t, d.getTime());
    return d.getTime();
  }

  /** Croner's last tick strictly before t. */
  private previousTick(t: number): number {
    const d = this.job.previousRuns(1, new Date(t))[0];
    if (d === undefined) throw new RangeError(`cron ${JSON.stringify(this.expression)} has no tick before ${new Date(t).toISOString()}`);
    return d.getTime();
  }

  protected floor(t: number): number {
    // Boundaries are defined as what nextTick yields; previousRuns only finds a starting point.
    // Should croner's backward search disagree with its forward one around a DST change, step
    // back further and walk forward so the result is always a forward tick.
    let ref = t + 1;
    for (let attempt = 0; attempt < 16; attempt++) {
      const p = this.previousTick(ref);
      let b = this.nextTick(p - 1);
      if (b <= t) {
        for (let n = this.nextTick(b); n <= t; n = this.nextTick(b)) b = n;
        return b;
      }
      ref = p;
    }
    throw new RangeError(`cron ${JSON.stringify(this.expression)}: cannot find the tick before ${new Date(t).toISOString()}`);
  }

  protected next(boundary: number): number {
    return this.nextTick(boundary);
  }

  firesAt(interval: Interval): number {
    return interval.end;
  }
  protected override label(): string {
    return `cron schedule ${JSON.stringify(this.expression)}`;
  }
  toJSON() {
    return { kind: this.kind, expression: this.expression, timezone: this.timezone };
  }
  describe(): string {
    return `cron ${JSON.stringify(this.expression)} ${this.timezone}`;
  }
}

/** 5-field (or 6 with seconds first) cron read in `timezone` (default "UTC"). */
export function cron(expression: string, opts: { timezone?: string } = {}): Timetable {
  if (typeof expression !== "string") {
    throw new DefinitionError(`bad cron expression ${String(expression)}: expected a string`);
  }
  const o = checkOptions("cron", opts, ["timezone"]);
  // Whitespace is normalised so that the JSON (and the pipeline hash) ignores spacing.
  const normal = expression.trim().split(/\s+/).join(" ");
  if (normal === "") throw new DefinitionError(`bad cron expression ${JSON.stringify(expression)}: it is empty`);
  return new CronTimetable(normal, optionalZone(o.timezone));
}
