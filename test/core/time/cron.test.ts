import { describe, expect, it } from "vitest";
import { DefinitionError } from "../../../src/core/model/errors.ts";
import { addDays, cron, startOfDay } from "../../../src/core/time/index.ts";
import { HOUR, at, hoursLong, local, span } from "./support.ts";

function startsOn(expression: string, timezone: string, date: string): string[] {
  return cron(expression, { timezone })
    .intervalsBetween(startOfDay(date, timezone), startOfDay(addDays(date, 1), timezone))
    .map((i) => local(i.start, timezone));
}

describe("a cron schedule", () => {
  it("owns the time between two ticks and fires at the second", () => {
    const t = cron("0 */6 * * *", { timezone: "Europe/London" });
    const i = t.intervalAt(at("2026-09-01T07:30", "Europe/London"));
    expect(span(i)).toEqual(["2026-09-01 06:00", "2026-09-01 12:00"]);
    expect(i.businessDate).toBe("2026-09-01");
    expect(t.firesAt(i)).toBe(i.end);
    expect(t.nextDue(at("2026-09-01T07:30", "Europe/London"))!.interval).toEqual(i);
  });

  it("ticks every six hours in local time, so the interval spanning a DST change is 5 or 7 hours", () => {
    const london = cron("0 */6 * * *", { timezone: "Europe/London" });
    expect(hoursLong(london.intervalAt(at("2026-03-29T03:00", "Europe/London")))).toBe(5);
    const ny = cron("0 */6 * * *", { timezone: "America/New_York" });
    expect(hoursLong(ny.intervalAt(at("2026-11-01T03:00", "America/New_York")))).toBe(7);
    expect(startsOn("0 */6 * * *", "America/New_York", "2026-11-01")).toEqual([
      "2026-11-01 00:00", "2026-11-01 06:00", "2026-11-01 12:00", "2026-11-01 18:00",
    ]);
  });

  it("fires a fixed-time job once on a repeated time and right after the gap on a skipped one", () => {
    expect(startsOn("30 1 * * *", "America/New_York", "2026-11-01")).toEqual(["2026-11-01 01:30-04:00"]);
    expect(startsOn("30 2 * * *", "America/New_York", "2026-03-08")).toEqual(["2026-03-08 03:00"]);
  });

  it("fires a stepped job on both occurrences of a repeated time and skips missing ones", () => {
    expect(startsOn("*/30 * * * *", "America/New_York", "2026-11-01").slice(2, 7)).toEqual([
      "2026-11-01 01:00-04:00", "2026-11-01 01:30-04:00", "2026-11-01 01:00-05:00", "2026-11-01 01:30-05:00", "2026-11-01 02:00",
    ]);
    expect(startsOn("*/30 * * * *", "America/New_York", "2026-03-08").slice(2, 5)).toEqual([
      "2026-03-08 01:00", "2026-03-08 01:30", "2026-03-08 03:00",
    ]);
  });

  it("supports a seconds field", () => {
    const t = cron("*/15 * * * * *");
    const i = t.intervalAt(at("2026-09-01T00:00:20"));
    expect(i.end - i.start).toBe(15_000);
    expect(local(i.start, "UTC")).toBe("2026-09-01 00:00:15");
  });

  it("names the one interval of a once-a-day expression by its date, and refuses dates with several", () => {
    expect(local(cron("0 2 * * *").intervalForDate("2026-09-01").start, "UTC")).toBe("2026-09-01 02:00");
    expect(() => cron("0 */6 * * *").intervalForDate("2026-09-01")).toThrow(
      'cron schedule "0 */6 * * *": 4 intervals start on 2026-09-01; name one by its start and end instead of a date',
    );
    expect(() => cron("0 0 * * 1").intervalForDate("2026-09-02")).toThrow("no interval starts on 2026-09-02");
  });

  it("ignores spacing in the expression", () => {
    expect(cron("  0   */6 * * * ").toJSON()).toEqual({ kind: "cron", expression: "0 */6 * * *", timezone: "UTC" });
  });

  it("walks a month of hourly ticks across the spring change: 743 intervals of one hour", () => {
    const all = cron("0 * * * *", { timezone: "Europe/London" }).intervalsBetween(
      at("2026-03-01", "Europe/London"),
      at("2026-04-01", "Europe/London"),
    );
    expect(all).toHaveLength(31 * 24 - 1);
    expect(all.every((i) => i.end - i.start === HOUR)).toBe(true);
  });

  describe("rejects a bad expression up front, naming it", () => {
    it.each([
      ["61 * * * *", "Invalid value for minute"],
      ["* * * *", "expected 5 fields"],
      ["0 0 * * * * 2026", "expected 5 fields"],
      ["2026-01-01T00:00:00", "expected 5 fields"],
      ["0 0 30 2 *", "it never fires"],
      ["", "it is empty"],
      ["a b c d e", ""],
    ])("%j", (expression, reason) => {
      expect(() => cron(expression)).toThrow(DefinitionError);
      expect(() => cron(expression)).toThrow(`bad cron expression ${JSON.stringify(expression)}: ${reason}`);
    });
  });
});
