import fc from "fast-check";
import { afterEach, describe, expect, it, vi } from "vitest";
import { pipeline } from "../../src/core/pipeline/define.ts";
import { cron, daily, hourly } from "../../src/core/time/index.ts";
import { nextDueOf } from "../../src/engine/scheduler/next-due.ts";
import { ScheduleHarness } from "../support/scheduling.ts";

let h: ScheduleHarness;
afterEach(async () => h?.close());
const noop = () => {};

describe("what a scheduler tick computes", () => {
  it("does no schedule arithmetic for a pipeline past its end, and asks its next fire once until it fires", async () => {
    const ended = pipeline("ended", { schedule: daily({ at: "02:00", timezone: "Europe/London" }), start: "2026-09-01", end: "2026-09-02" }, { load: { run: noop } });
    h = await ScheduleHarness.open([ended], "2026-09-01T00:00:00Z");
    await h.at("2026-09-10T03:00:00Z");
    expect((await h.runs("ended")).map((r) => r.businessDate)).toEqual(["2026-09-01", "2026-09-02"]);

    const dueBetween = vi.spyOn(ended.schedule, "dueBetween");
    const nextDue = vi.spyOn(ended.schedule, "nextDue");
    for (const at of ["2026-09-10T04:00:00Z", "2026-09-10T09:00:00Z", "2026-09-10T23:00:00Z"]) {
      h.clock.set(at);
      expect((await h.scheduler.tick()).runsCreated).toBe(0);
    }
    expect(dueBetween).not.toHaveBeenCalled();
    expect(nextDue).not.toHaveBeenCalled(); // the 09-10 interval fires on 09-11 at 02:00: still the answer
    h.clock.set("2026-09-11T02:30:00Z");
    await h.scheduler.tick();
    expect(nextDue).toHaveBeenCalledTimes(1);
    expect(await h.runs("ended")).toHaveLength(2);
  });

  it("still creates the runs a live pipeline is due while its next fire is remembered", async () => {
    const live = pipeline("live", { schedule: hourly(), start: "2026-09-01" }, { load: { run: noop } });
    h = await ScheduleHarness.open([live], "2026-09-01T00:00:00Z");
    await h.at("2026-09-01T00:30:00Z");
    await h.at("2026-09-01T03:00:00Z");
    expect((await h.runs("live")).map((r) => r.intervalStart)).toEqual([0, 1, 2].map((k) => Date.parse("2026-09-01T00:00:00Z") + k * 3_600_000));
  });
});

describe("the next fire of a schedule, remembered", () => {
  it("is what the schedule says, whatever the instants asked and in whatever order", () => {
    // A new schedule for each case, so that each starts with nothing remembered.
    const makers = [() => daily({ at: "02:30", timezone: "Europe/London" }), () => hourly(), () => cron("*/7 * * * *", { timezone: "America/New_York" })];
    const start = Date.parse("2026-03-28T00:00:00Z"); // London's and New York's DST changes within reach
    fc.assert(fc.property(
      fc.integer({ min: 0, max: makers.length - 1 }),
      fc.array(fc.oneof(fc.integer({ min: 0, max: 90_000_000 }), fc.integer({ min: -3_600_000, max: 0 })), { minLength: 1, maxLength: 30 }),
      (which, steps) => {
        const schedule = makers[which]!();
        let now = start;
        for (const step of steps) {
          now += step; // mostly forward, sometimes back (a clock set back)
          expect(nextDueOf(schedule, now)).toEqual(schedule.nextDue(now));
        }
      },
    ), { numRuns: 200 });
  });
});
