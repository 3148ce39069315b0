import { describe, expect, it } from "vitest";
import fc from "fast-check";
import {
  cron,
  daily,
  hourly,
  intervalKey,
  localDate,
  manual,
  monthly,
  toZoned,
  weekly,
  WEEKDAYS,
} from "../../../src/core/time/index.ts";
import type { Interval, Timetable } from "../../../src/core/time/index.ts";
import { DAY, HOUR } from "./support.ts";

// IDEM_FC_RUNS=5000 for a deeper soak; 200 keeps the suite fast.
const RUNS = { numRuns: Number(process.env.IDEM_FC_RUNS ?? 200) };

const ZONES = [
  "UTC",
  "America/New_York",
  "Europe/London",
  "Australia/Sydney",
  "America/Sao_Paulo",
  "Australia/Lord_Howe", // DST shifts by 30 minutes
  "Asia/Kolkata", // offset is not a whole hour
  "Pacific/Apia", // skipped 2011-12-30 entirely
  "America/St_Johns", // fell back at 00:01 in 2010, so its local date ran backwards
  "Pacific/Chatham", // offsets of +12:45 / +13:45
] as const;

// From 1900 to reach the odd historic rules too (local mean time, half-hour and 20-minute shifts).
const FROM = Date.UTC(1900, 0, 1);
const TO = Date.UTC(2035, 0, 1);

/**
 * Instants either anywhere in 1900-2035 or within two days of one of the zone's clock changes,
 * where all the bugs live and where uniform sampling would rarely look.
 */
function instantNearChanges(timezone: string): fc.Arbitrary<number> {
  const anywhere = fc.integer({ min: FROM, max: TO });
  const nearChange = fc.tuple(anywhere, fc.integer({ min: -2 * DAY, max: 2 * DAY })).map(([t, jitter]) => {
    const change = toZoned(t, timezone).getTimeZoneTransition("next");
    return (change ? change.epochMilliseconds : t) + jitter;
  });
  return fc.oneof(anywhere, nearChange);
}

const zone = fc.constantFrom(...ZONES);
const time = fc.tuple(fc.integer({ min: 0, max: 23 }), fc.integer({ min: 0, max: 59 })).map(
  ([h, m]) => `${String(h).padStart(2, "0")}:${String(m).padStart(2, "0")}`,
);
const dst = fc.constantFrom("compatible", "earlier", "later" as const);

interface Kind {
  name: string;
  timetable: fc.Arbitrary<Timetable>;
  /** A range wide enough to hold several intervals but cheap to walk. */
  span: number;
  /** Whether every interval is named by its business date alone. */
  datedByDay: boolean;
}

const KINDS: Kind[] = [
  {
    name: "daily",
    timetable: fc.tuple(time, zone, dst).map(([at, timezone, d]) => daily({ at, timezone, dst: d })),
    span: 10 * DAY,
    datedByDay: true,
  },
  {
    name: "hourly",
    timetable: fc.tuple(fc.integer({ min: 0, max: 59 }), zone).map(([minute, timezone]) => hourly({ minute, timezone })),
    span: 12 * HOUR,
    datedByDay: false,
  },
  {
    name: "weekly",
    timetable: fc.tuple(fc.constantFrom(...WEEKDAYS), time, zone, dst).map(([on, at, timezone, d]) => weekly({ on, at, timezone, dst: d })),
    span: 60 * DAY,
    datedByDay: true,
  },
  {
    name: "monthly",
    timetable: fc.tuple(fc.integer({ min: 1, max: 28 }), time, zone, dst).map(([day, at, timezone, d]) => monthly({ day, at, timezone, dst: d })),
    span: 200 * DAY,
    datedByDay: true,
  },
  {
    name: "cron",
    timetable: fc.tuple(
      fc.constantFrom("0 */6 * * *", "30 2 * * *", "30 1 * * *", "*/30 * * * *", "15 1 * * 0", "0 0 1 * *", "0 9-17 * * 1-5", "0 6,18 * * *"),
      zone,
    ).map(([expression, timezone]) => cron(expression, { timezone })),
    span: 1 * DAY,
    datedByDay: false,
  },
  {
    name: "manual",
    timetable: zone.map((timezone) => manual({ timezone })),
    span: 10 * DAY,
    datedByDay: true,
  },
];

/** A timetable together with an instant near its zone's clock changes. */
function withInstant(kind: Kind): fc.Arbitrary<[Timetable, number]> {
  return kind.timetable.chain((t) => instantNearChanges(t.timezone).map((ms) => [t, ms] as [Timetable, number]));
}

function expectTiled(intervals: Interval[]): void {
  for (let k = 1; k < intervals.length; k++) expect(intervals[k]!.start).toBe(intervals[k - 1]!.end);
}

describe.each(KINDS)("$name timetables, in any of several zones", (kind) => {
  it("put every instant inside the interval found for it", () => {
    fc.assert(
      fc.property(withInstant(kind), ([t, ms]) => {
        const i = t.intervalAt(ms);
        expect(i.start).toBeLessThanOrEqual(ms);
        expect(i.end).toBeGreaterThan(ms);
        expect(i.businessDate).toBe(localDate(i.start, t.timezone));
        expect(i.timezone).toBe(t.timezone);
      }),
      RUNS,
    );
  });

  it("tile time: each interval starts exactly where the previous one ends", () => {
    fc.assert(
      fc.property(withInstant(kind), ([t, ms]) => {
        const i = t.intervalAt(ms);
        expect(t.intervalAt(i.end).start).toBe(i.end);
        expect(t.intervalAt(i.start - 1).end).toBe(i.start);
      }),
      RUNS,
    );
  });

  it("list the intervals starting in a range in order, with no gap and no overlap", () => {
    fc.assert(
      fc.property(withInstant(kind), fc.double({ min: 0, max: 1, noNaN: true }), ([t, from], fraction) => {
        const to = from + Math.floor(fraction * kind.span);
        const list = t.intervalsBetween(from, to);
        expectTiled(list);
        for (const i of list) {
          expect(i.start).toBeGreaterThanOrEqual(from);
          expect(i.start).toBeLessThan(to);
        }
        // Nothing is left out at either end.
        const first = t.intervalAt(from);
        const firstStart = first.start === from ? from : first.end;
        if (firstStart < to) expect(list[0]?.start).toBe(firstStart);
        else expect(list).toEqual([]);
        const last = list.at(-1);
        if (last) expect(last.end).toBeGreaterThanOrEqual(to);
      }),
      RUNS,
    );
  });

  if (kind.datedByDay) {
    it("find an interval again by its business date", () => {
      fc.assert(
        fc.property(withInstant(kind), ([t, ms]) => {
          const i = t.intervalAt(ms);
          expect(t.intervalForDate(i.businessDate)).toEqual(i);
        }),
        RUNS,
      );
    });
  }

  if (kind.name === "manual") return;

  it("never fire an interval before it has ended", () => {
    fc.assert(
      fc.property(withInstant(kind), ([t, ms]) => {
        const i = t.intervalAt(ms);
        expect(t.firesAt(i)).toBeGreaterThanOrEqual(i.end);
      }),
      RUNS,
    );
  });

  it("say what fires next after t, with nothing firing in between", () => {
    fc.assert(
      fc.property(withInstant(kind), ([t, ms]) => {
        const due = t.nextDue(ms)!;
        expect(due.firesAt).toBe(t.firesAt(due.interval));
        expect(due.firesAt).toBeGreaterThan(ms);
        // Fire times increase along the intervals, so the neighbours bound everything else.
        const before = t.intervalAt(due.interval.start - 1);
        const after = t.intervalAt(due.interval.end);
        expect(t.firesAt(before)).toBeLessThanOrEqual(ms);
        expect(t.firesAt(after)).toBeGreaterThan(due.firesAt);
      }),
      RUNS,
    );
  });

  it("list every due interval once, oldest first, and nothing that is not yet due", () => {
    fc.assert(
      fc.property(withInstant(kind), fc.double({ min: 0, max: 1, noNaN: true }), fc.nat({ max: 5 }), ([t, from], fraction, limit) => {
        const now = from + Math.floor(fraction * kind.span);
        const due = t.dueBetween(from, now);
        expectTiled(due.map((d) => d.interval));
        expect(new Set(due.map((d) => intervalKey(d.interval))).size).toBe(due.length);
        for (let k = 1; k < due.length; k++) expect(due[k]!.firesAt).toBeGreaterThan(due[k - 1]!.firesAt);
        for (const d of due) {
          expect(d.interval.start).toBeGreaterThanOrEqual(from);
          expect(d.firesAt).toBeLessThanOrEqual(now);
          expect(d.firesAt).toBe(t.firesAt(d.interval));
        }
        // The interval after the last one listed (or the first one at or after `from`) is not due yet.
        const first = t.intervalAt(from);
        const nextStart = due.length ? due.at(-1)!.interval.end : first.start === from ? from : first.end;
        expect(t.firesAt(t.intervalAt(nextStart))).toBeGreaterThan(now);
        expect(t.dueBetween(from, now, limit)).toEqual(due.slice(0, limit));
      }),
      RUNS,
    );
  });

  it("preview n fires in increasing order, starting with the next one", () => {
    fc.assert(
      fc.property(withInstant(kind), fc.integer({ min: 1, max: 6 }), ([t, ms], n) => {
        const preview = t.preview(ms, n);
        expect(preview).toHaveLength(n);
        expect(preview[0]).toEqual(t.nextDue(ms));
        for (let k = 1; k < n; k++) expect(preview[k]!.firesAt).toBeGreaterThan(preview[k - 1]!.firesAt);
        expectTiled(preview.map((d) => d.interval));
      }),
      RUNS,
    );
  });
});
