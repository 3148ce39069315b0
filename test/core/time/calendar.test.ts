import { describe, expect, it } from "vitest";
import { manual, monthly, weekly } from "../../../src/core/time/index.ts";
import { DAY, HOUR, at, hoursLong, local, span } from "./support.ts";

describe("a weekly schedule", () => {
  it("owns Monday to Monday by default and fires on the Monday that closes it", () => {
    const t = weekly({ at: "06:00", timezone: "UTC" });
    const i = t.intervalAt(at("2026-09-02T12:00")); // a Wednesday
    expect(span(i)).toEqual(["2026-08-31 00:00", "2026-09-07 00:00"]);
    expect(i.businessDate).toBe("2026-08-31");
    expect(local(t.firesAt(i), "UTC")).toBe("2026-09-07 06:00");
  });

  it("can start its weeks on another day", () => {
    const t = weekly({ on: "sunday" });
    expect(span(t.intervalAt(at("2026-09-02T12:00")))).toEqual(["2026-08-30 00:00", "2026-09-06 00:00"]);
    expect(span(t.intervalAt(at("2026-09-06T00:00")))).toEqual(["2026-09-06 00:00", "2026-09-13 00:00"]);
  });

  it("crosses the year boundary as one week", () => {
    const i = weekly({}).intervalAt(at("2027-01-01T09:00"));
    expect(span(i)).toEqual(["2026-12-28 00:00", "2027-01-04 00:00"]);
    expect(i.end - i.start).toBe(7 * DAY);
  });

  it("is an hour short in the week London springs forward", () => {
    const i = weekly({ timezone: "Europe/London" }).intervalForDate("2026-03-23");
    expect(hoursLong(i)).toBe(7 * 24 - 1);
  });

  it("names the week start when asked for a date inside a week", () => {
    expect(() => weekly({}).intervalForDate("2026-09-02")).toThrow(
      "weekly schedule (weeks start on monday): no interval starts on 2026-09-02; the one containing it is [2026-08-31 00:00, 2026-09-07 00:00) UTC",
    );
    expect(weekly({}).intervalForDate("2026-08-31").businessDate).toBe("2026-08-31");
  });
});

describe("a monthly schedule", () => {
  it("owns the calendar month: 31 days for January", () => {
    const i = monthly({}).intervalForDate("2026-01-01");
    expect(span(i)).toEqual(["2026-01-01 00:00", "2026-02-01 00:00"]);
    expect(i.end - i.start).toBe(31 * DAY);
  });

  it("gives February 2028 its leap day, and February 2027 none", () => {
    expect(monthly({}).intervalForDate("2028-02-01").end - monthly({}).intervalForDate("2028-02-01").start).toBe(29 * DAY);
    expect(monthly({}).intervalForDate("2027-02-01").end - monthly({}).intervalForDate("2027-02-01").start).toBe(28 * DAY);
  });

  it("is an hour short in New York's March", () => {
    expect(monthly({ timezone: "America/New_York" }).intervalForDate("2026-03-01").end -
      monthly({ timezone: "America/New_York" }).intervalForDate("2026-03-01").start).toBe(31 * DAY - HOUR);
  });

  it("fires on the given day of the following month", () => {
    const t = monthly({ day: 3, at: "06:00", timezone: "Europe/London" });
    const jan = t.intervalForDate("2026-01-01");
    expect(local(t.firesAt(jan), "Europe/London")).toBe("2026-02-03 06:00");
    const dec = t.intervalForDate("2026-12-01");
    expect(local(t.firesAt(dec), "Europe/London")).toBe("2027-01-03 06:00");
  });

  it("waits for the fire day of the month after next when a month is still due", () => {
    const t = monthly({ day: 28 });
    const due = t.nextDue(at("2026-03-10T00:00"))!;
    expect(due.interval.businessDate).toBe("2026-02-01");
    expect(local(due.firesAt, "UTC")).toBe("2026-03-28 00:00");
  });

  it("only names intervals by the first of the month", () => {
    expect(() => monthly({}).intervalForDate("2026-01-15")).toThrow("no interval starts on 2026-01-15");
  });
});

describe("a manual schedule", () => {
  const t = manual({ timezone: "Europe/London" });

  it("names calendar days but never fires by itself", () => {
    const i = t.intervalForDate("2026-03-29");
    expect(span(i)).toEqual(["2026-03-29 00:00", "2026-03-30 00:00"]);
    expect(hoursLong(i)).toBe(23);
    expect(t.firesAt(i)).toBe(Infinity);
    expect(t.intervalAt(at("2026-09-01T12:00", "Europe/London")).businessDate).toBe("2026-09-01");
  });

  it("has nothing due, next or to preview", () => {
    expect(t.nextDue(at("2026-09-01"))).toBeNull();
    expect(t.dueBetween(at("2020-01-01"), at("2026-09-01"))).toEqual([]);
    expect(t.preview(at("2026-09-01"), 5)).toEqual([]);
  });

  it("still lists its days for a backfill range", () => {
    expect(t.intervalsBetween(at("2026-09-01", "Europe/London"), at("2026-09-04", "Europe/London")).map((i) => i.businessDate))
      .toEqual(["2026-09-01", "2026-09-02", "2026-09-03"]);
  });
});
