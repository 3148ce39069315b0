import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { cron, daily, hourly, monthly, toZoned, weekly } from "../../src/core/time/index.ts";
import type { Timetable } from "../../src/core/time/index.ts";
import { duesBetween } from "../../src/engine/scheduler/due-cache.ts";

const RUNS = { numRuns: Number(process.env.IDEM_FC_RUNS ?? 60) };
const DAY = 86_400_000;
const ZONES = ["UTC", "Europe/London", "America/New_York", "Australia/Lord_Howe", "Pacific/Apia", "America/St_Johns"] as const;
const FROM = Date.UTC(2005, 0, 1);
const TO = Date.UTC(2030, 0, 1);

/** Instants anywhere, or within two days of one of the zone's clock changes. */
const instant = (timezone: string) =>
  fc.oneof(
    fc.integer({ min: FROM, max: TO }),
    fc.tuple(fc.integer({ min: FROM, max: TO }), fc.integer({ min: -2 * DAY, max: 2 * DAY })).map(([t, jitter]) => {
      const change = toZoned(t, timezone).getTimeZoneTransition("next");
      return (change ? change.epochMilliseconds : t) + jitter;
    }),
  );

const schedules: fc.Arbitrary<{ schedule: Timetable; span: number }> = fc.constantFrom(...ZONES).chain((timezone) =>
  fc.constantFrom(
    { schedule: daily({ at: "02:30", timezone }), span: 40 * DAY },
    { schedule: hourly({ timezone }), span: 3 * DAY },
    { schedule: weekly({ timezone }), span: 120 * DAY },
    { schedule: monthly({ timezone }), span: 400 * DAY },
    { schedule: cron("15 */6 * * *", { timezone }), span: 10 * DAY },
  ),
);

/** What the cache must always answer: the schedule's own intervals and fire times. */
function direct(schedule: Timetable, from: number, to: number) {
  return schedule.intervalsBetween(from, to).map((interval) => ({ interval, firesAt: schedule.firesAt(interval) }));
}

describe("a schedule's intervals and fire times, kept once per schedule", () => {
  it("answers every window exactly as the schedule does, whatever windows were asked before (overlapping, mid-interval, empty)", () => {
    fc.assert(
      fc.property(
        schedules.chain(({ schedule, span }) =>
          fc.tuple(
            fc.constant(schedule),
            fc.array(fc.tuple(instant(schedule.timezone), fc.integer({ min: -span / 4, max: span })), { minLength: 1, maxLength: 6 }),
          ),
        ),
        ([schedule, windows]) => {
          for (const [from, length] of windows) {
            // Ask twice: the first fills the cache, the second reads it; both must be the schedule's answer.
            const expected = direct(schedule, from, from + length);
            expect(duesBetween(schedule, from, from + length)).toEqual(expected);
            expect(duesBetween(schedule, from, from + length)).toEqual(expected);
            // A window inside the last one, starting at one of its boundaries or between two.
            if (expected.length > 2) {
              const inner = [expected[1]!.interval.start + (length % 2), expected.at(-1)!.interval.start] as const;
              expect(duesBetween(schedule, ...inner)).toEqual(direct(schedule, ...inner));
            }
          }
        },
      ),
      RUNS,
    );
  });

  it("shares frozen entries, so no caller can change another's interval", () => {
    const schedule = daily({ at: "06:00", timezone: "Europe/London" });
    const from = Date.UTC(2026, 2, 20);
    const [first] = duesBetween(schedule, from, from + 10 * DAY);
    expect(Object.isFrozen(first)).toBe(true);
    expect(Object.isFrozen(first!.interval)).toBe(true);
    expect(duesBetween(schedule, from, from + 10 * DAY)[0]).toBe(first);
  });
});
