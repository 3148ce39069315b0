import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { manualRunTooEarly } from "../../../src/core/policy/manual-run.ts";
import { cron, daily, hourly, manual, monthly, weekly } from "../../../src/core/time/index.ts";
import type { Timetable } from "../../../src/core/time/index.ts";

const HOUR = 3_600_000;
const FROM = Date.UTC(2020, 0, 1);
const TO = Date.UTC(2030, 0, 1);

const zone = fc.constantFrom("UTC", "Europe/London", "America/Sao_Paulo", "Australia/Lord_Howe", "Asia/Kolkata", "Pacific/Apia");
const schedule: fc.Arbitrary<Timetable> = fc.oneof(
  zone.map((timezone) => daily({ at: "02:00", timezone })),
  zone.map((timezone) => hourly({ timezone })),
  zone.map((timezone) => weekly({ on: "monday", at: "06:00", timezone })),
  zone.map((timezone) => monthly({ day: 1, at: "03:00", timezone })),
  zone.map((timezone) => cron("0 */6 * * *", { timezone })),
);
const instant = fc.integer({ min: FROM, max: TO });
// Intervals near `now` (where the answer changes) as often as far from it.
const near = fc.integer({ min: -72 * HOUR, max: 72 * HOUR });

describe("a manual run", () => {
  it("is refused exactly while its interval has not ended, naming its end", () => {
    fc.assert(fc.property(schedule, instant, near, (s, now, offset) => {
      const interval = s.intervalAt(now + offset);
      const refusal = manualRunTooEarly(s, interval, now, null);
      expect(refusal === null).toBe(interval.end <= now);
      if (refusal) expect(refusal.endsAt).toBe(interval.end);
    }));
  });

  it("is told the newest interval that may run now: ended, and the next one has not", () => {
    fc.assert(fc.property(schedule, instant, (s, now) => {
      const refusal = manualRunTooEarly(s, s.intervalAt(now), now, null)!;
      const newest = refusal.newestEnded!;
      expect(manualRunTooEarly(s, newest, now, null)).toBeNull();
      expect(newest.end).toBeLessThanOrEqual(now);
      const after = s.intervalAt(newest.end);
      expect(after.end).toBeGreaterThan(now);
    }));
  });

  it("is told of none when no interval since the pipeline's start has ended", () => {
    fc.assert(fc.property(schedule, instant, fc.integer({ min: 0, max: 48 * HOUR }), (s, now, ahead) => {
      const start = s.intervalAt(now).start - ahead;
      const refusal = manualRunTooEarly(s, s.intervalAt(now), now, start)!;
      const newest = refusal.newestEnded;
      if (newest === null) expect(s.intervalAt(s.intervalAt(now).start - 1).start).toBeLessThan(start);
      else expect(newest.start).toBeGreaterThanOrEqual(start);
    }));
  });

  it("of a manual-only pipeline is never refused: no schedule makes the run it would take the place of", () => {
    fc.assert(fc.property(zone, instant, near, (timezone, now, offset) => {
      const s = manual({ timezone });
      expect(manualRunTooEarly(s, s.intervalAt(now + offset), now, null)).toBeNull();
    }));
  });
});
