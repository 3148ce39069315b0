import { describe, expect, it } from "vitest";
import { hourly, intervalKey, startOfDay, addDays } from "../../../src/core/time/index.ts";
import { HOUR, at, local, span } from "./support.ts";

function hoursOf(timezone: string, date: string) {
  return hourly({ timezone }).intervalsBetween(startOfDay(date, timezone), startOfDay(addDays(date, 1), timezone));
}

describe("an hourly schedule", () => {
  it("owns one wall-clock hour and fires when it ends", () => {
    const t = hourly({ timezone: "Europe/London" });
    const i = t.intervalAt(at("2026-09-01T10:15", "Europe/London"));
    expect(span(i)).toEqual(["2026-09-01 10:00", "2026-09-01 11:00"]);
    expect(t.firesAt(i)).toBe(i.end);
  });

  it("fires `minute` minutes after the hour ends", () => {
    const t = hourly({ minute: 5, timezone: "UTC" });
    const i = t.intervalAt(at("2026-09-01T10:15"));
    expect(local(t.firesAt(i), "UTC")).toBe("2026-09-01 11:05");
    expect(t.nextDue(at("2026-09-01T11:04"))!.interval).toEqual(i);
    expect(t.nextDue(at("2026-09-01T11:05"))!.interval.start).toBe(i.end);
  });

  it.each([
    ["America/New_York", "2026-03-08", 23],
    ["America/New_York", "2026-11-01", 25],
    ["Europe/London", "2026-03-29", 23],
    ["Europe/London", "2026-10-25", 25],
    ["Australia/Sydney", "2026-04-05", 25],
    ["Australia/Sydney", "2026-10-04", 23],
    ["America/Sao_Paulo", "2018-11-04", 23],
    ["America/Sao_Paulo", "2019-02-16", 25],
    ["UTC", "2026-03-08", 24],
  ])("in %s, %s has %d hourly intervals of one hour each", (timezone, date, count) => {
    const hours = hoursOf(timezone, date);
    expect(hours).toHaveLength(count);
    expect(hours.every((h) => h.end - h.start === HOUR)).toBe(true);
    expect(hours.every((h) => h.businessDate === date)).toBe(true);
    expect(new Set(hours.map(intervalKey)).size).toBe(count);
  });

  it("skips New York's missing 02:00 hour on 2026-03-08", () => {
    const labels = hoursOf("America/New_York", "2026-03-08").map((h) => local(h.start, h.timezone).slice(11));
    expect(labels.slice(0, 4)).toEqual(["00:00", "01:00", "03:00", "04:00"]);
  });

  it("runs New York's 01:00 hour twice on 2026-11-01, once per offset", () => {
    const labels = hoursOf("America/New_York", "2026-11-01").map((h) => local(h.start, h.timezone).slice(11));
    expect(labels.slice(0, 4)).toEqual(["00:00", "01:00-04:00", "01:00-05:00", "02:00"]);
  });

  it("follows Lord Howe's half-hour shift: the hour whose 02:00 is skipped lasts 90 minutes", () => {
    const hours = hoursOf("Australia/Lord_Howe", "2026-10-04");
    expect(hours.slice(1, 3).map((h) => span(h))).toEqual([
      ["2026-10-04 01:00", "2026-10-04 03:00"],
      ["2026-10-04 03:00", "2026-10-04 04:00"],
    ]);
    expect(hours[1]!.end - hours[1]!.start).toBe(1.5 * HOUR);
  });

  it("starts a new hour at every HH:00, even when a zone falls back by part of an hour across one", () => {
    // Pacific/Chatham went from +13:45 to +12:45 at 03:45 on 2026-04-05: 03:00 came twice.
    const t = hourly({ timezone: "Pacific/Chatham" });
    const i = t.intervalAt(at("2026-04-05T02:50:00+12:45"));
    expect(span(i)).toEqual(["2026-04-05 03:00+13:45", "2026-04-05 03:00+12:45"]);
    expect(i.end - i.start).toBe(HOUR);
  });

  it("refuses a single date, since many intervals start on it", () => {
    expect(() => hourly({}).intervalForDate("2026-09-01")).toThrow(
      "hourly schedule: 24 intervals start on 2026-09-01; name one by its start and end instead of a date",
    );
    expect(() => hourly({ timezone: "America/New_York" }).intervalForDate("2026-11-01")).toThrow("25 intervals");
  });

  it("iterates a month of hours across the spring change: 743 intervals", () => {
    const all = hourly({ timezone: "Europe/London" }).intervalsBetween(
      at("2026-03-01", "Europe/London"),
      at("2026-04-01", "Europe/London"),
    );
    expect(all).toHaveLength(31 * 24 - 1);
  });
});
