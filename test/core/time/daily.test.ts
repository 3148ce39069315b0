import { describe, expect, it } from "vitest";
import { daily } from "../../../src/core/time/index.ts";
import type { DstPolicy } from "../../../src/core/time/index.ts";
import { at, hoursLong, local, span } from "./support.ts";

describe("a daily schedule", () => {
  it("owns the calendar day and fires the next morning at the given time", () => {
    const t = daily({ at: "06:00", timezone: "Europe/London" });
    const i = t.intervalForDate("2026-09-01");
    expect(span(i)).toEqual(["2026-09-01 00:00", "2026-09-02 00:00"]);
    expect(i.businessDate).toBe("2026-09-01");
    expect(i.timezone).toBe("Europe/London");
    expect(local(t.firesAt(i), "Europe/London")).toBe("2026-09-02 06:00");
  });

  it("defaults to midnight UTC, firing the moment the day closes", () => {
    const t = daily({});
    const i = t.intervalForDate("2026-09-01");
    expect(i.start).toBe(Date.UTC(2026, 8, 1));
    expect(t.firesAt(i)).toBe(i.end);
    expect(t.timezone).toBe("UTC");
  });

  it("accepts the leap day 2028-02-29", () => {
    const i = daily({}).intervalForDate("2028-02-29");
    expect(span(i)).toEqual(["2028-02-29 00:00", "2028-03-01 00:00"]);
  });

  describe("on days when the clocks change", () => {
    it.each([
      ["America/New_York", "2026-03-08", 23],
      ["America/New_York", "2026-11-01", 25],
      ["Europe/London", "2026-03-29", 23],
      ["Europe/London", "2026-10-25", 25],
      ["Australia/Sydney", "2026-04-05", 25],
      ["Australia/Sydney", "2026-10-04", 23],
      ["America/Sao_Paulo", "2018-11-04", 23],
      ["America/Sao_Paulo", "2019-02-16", 25],
      ["America/Sao_Paulo", "2019-02-17", 24],
    ])("in %s, %s is %d hours long", (timezone, date, hours) => {
      const i = daily({ timezone }).intervalForDate(date);
      expect(hoursLong(i)).toBe(hours);
      expect(i.businessDate).toBe(date);
    });

    it("starts São Paulo's 2018-11-04 at 01:00, because its midnight did not exist", () => {
      const t = daily({ timezone: "America/Sao_Paulo" });
      const i = t.intervalForDate("2018-11-04");
      expect(span(i)).toEqual(["2018-11-04 01:00", "2018-11-05 00:00"]);
      expect(t.intervalForDate("2018-11-03").end).toBe(i.start);
      expect(t.intervalAt(i.start - 1).businessDate).toBe("2018-11-03");
    });

    it("gives São Paulo's 2019-02-16 both of its 23:00 hours, and 02-17 starts at the second midnight", () => {
      const t = daily({ timezone: "America/Sao_Paulo" });
      const i = t.intervalForDate("2019-02-16");
      expect(i.end).toBe(at("2019-02-17T00:00:00-03:00"));
      expect(t.intervalAt(at("2019-02-16T23:30:00-02:00")).businessDate).toBe("2019-02-16");
      expect(t.intervalAt(at("2019-02-16T23:30:00-03:00")).businessDate).toBe("2019-02-16");
    });

    it("starts the next day at its first midnight even when the clock later falls back into the previous day", () => {
      // St. John's fell back at 00:01 on 2010-11-07, to 23:01 on 11-06.
      const t = daily({ timezone: "America/St_Johns" });
      const rerun = at("2010-11-06T23:30:00-03:30");
      const i = t.intervalAt(rerun);
      expect(i.businessDate).toBe("2010-11-07");
      expect(i.start).toBe(at("2010-11-07T00:00:00-02:30"));
      expect(hoursLong(i)).toBe(25);
      expect(hoursLong(t.intervalForDate("2010-11-06"))).toBe(24);
    });

    it("has no interval for a date the zone skipped entirely, and says so", () => {
      const t = daily({ timezone: "Pacific/Apia" });
      expect(() => t.intervalForDate("2011-12-30")).toThrow("no interval starts on 2011-12-30, a date Pacific/Apia skipped");
      const before = t.intervalForDate("2011-12-29");
      const after = t.intervalForDate("2011-12-31");
      expect(before.end).toBe(after.start);
    });
  });

  describe("with a fire time inside the spring gap or the autumn overlap", () => {
    // Expected fire instants, by policy, for the interval of the day before the change.
    const cases: Array<[string, string, string, Record<DstPolicy, string>]> = [
      // London 01:30 on 2026-03-29 does not exist (01:00 GMT -> 02:00 BST).
      ["Europe/London", "01:30", "2026-03-28", {
        compatible: "2026-03-29T01:30:00Z", earlier: "2026-03-29T00:30:00Z", later: "2026-03-29T01:30:00Z",
      }],
      // London 01:30 on 2026-10-25 happens twice (BST, then GMT).
      ["Europe/London", "01:30", "2026-10-24", {
        compatible: "2026-10-25T00:30:00Z", earlier: "2026-10-25T00:30:00Z", later: "2026-10-25T01:30:00Z",
      }],
      // New York 01:30 on 2026-11-01 happens twice (EDT, then EST).
      ["America/New_York", "01:30", "2026-10-31", {
        compatible: "2026-11-01T05:30:00Z", earlier: "2026-11-01T05:30:00Z", later: "2026-11-01T06:30:00Z",
      }],
      // New York 02:30 on 2026-03-08 does not exist (02:00 EST -> 03:00 EDT).
      ["America/New_York", "02:30", "2026-03-07", {
        compatible: "2026-03-08T07:30:00Z", earlier: "2026-03-08T06:30:00Z", later: "2026-03-08T07:30:00Z",
      }],
      // Sydney 02:30 on 2026-04-05 happens twice (AEDT, then AEST).
      ["Australia/Sydney", "02:30", "2026-04-04", {
        compatible: "2026-04-04T15:30:00Z", earlier: "2026-04-04T15:30:00Z", later: "2026-04-04T16:30:00Z",
      }],
      // Sydney 02:30 on 2026-10-04 does not exist (02:00 AEST -> 03:00 AEDT).
      ["Australia/Sydney", "02:30", "2026-10-03", {
        compatible: "2026-10-03T16:30:00Z", earlier: "2026-10-03T15:30:00Z", later: "2026-10-03T16:30:00Z",
      }],
    ];

    for (const [timezone, time, date, expected] of cases) {
      for (const dst of ["compatible", "earlier", "later"] as const) {
        it(`${timezone} at ${time}, interval ${date}, policy ${dst}, fires at ${expected[dst]}`, () => {
          const t = daily({ at: time, timezone, dst });
          expect(t.firesAt(t.intervalForDate(date))).toBe(at(expected[dst]));
        });
      }
    }

    it("never fires before the interval has ended, even when 'earlier' would land inside it", () => {
      // São Paulo 2018-11-04 00:30 does not exist; 'earlier' resolves to 11-03 23:30, before 11-04 opens.
      const early = daily({ at: "00:30", timezone: "America/Sao_Paulo", dst: "earlier" });
      const i = early.intervalForDate("2018-11-03");
      expect(early.firesAt(i)).toBe(i.end);
      const compatible = daily({ at: "00:30", timezone: "America/Sao_Paulo" });
      expect(local(compatible.firesAt(i), "America/Sao_Paulo")).toBe("2018-11-04 01:30");
    });
  });

  it("schedules the next run for the day that just closed", () => {
    const t = daily({ at: "06:00", timezone: "Europe/London" });
    const before = t.nextDue(at("2026-09-02T05:00", "Europe/London"))!;
    expect(before.interval.businessDate).toBe("2026-09-01");
    expect(local(before.firesAt, "Europe/London")).toBe("2026-09-02 06:00");
    const after = t.nextDue(at("2026-09-02T06:00", "Europe/London"))!;
    expect(after.interval.businessDate).toBe("2026-09-02");
  });

  it("lists every missed day once, oldest first, across a DST change", () => {
    const t = daily({ at: "02:00", timezone: "America/New_York" });
    const due = t.dueBetween(at("2026-03-06", "America/New_York"), at("2026-03-10T02:00", "America/New_York"));
    expect(due.map((d) => d.interval.businessDate)).toEqual(["2026-03-06", "2026-03-07", "2026-03-08", "2026-03-09"]);
    expect(local(due[2]!.firesAt, "America/New_York")).toBe("2026-03-09 02:00");
    expect(t.dueBetween(at("2026-03-06", "America/New_York"), at("2026-03-10T02:00", "America/New_York"), 2)).toEqual(due.slice(0, 2));
  });

  it("iterates three years of days, one interval per business date", () => {
    const t = daily({ at: "06:00", timezone: "Europe/London" });
    const all = t.intervalsBetween(at("2024-01-01", "Europe/London"), at("2027-01-01", "Europe/London"));
    expect(all).toHaveLength(366 + 365 + 365);
  });
});
