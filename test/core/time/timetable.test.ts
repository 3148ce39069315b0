import { describe, expect, it } from "vitest";
import { DefinitionError } from "../../../src/core/model/errors.ts";
import {
  cron,
  daily,
  describeInterval,
  hourly,
  intervalKey,
  manual,
  monthly,
  timetableFromJSON,
  weekly,
} from "../../../src/core/time/index.ts";
import type { Timetable } from "../../../src/core/time/index.ts";
import { at } from "./support.ts";

const examples: Array<[Timetable, Record<string, unknown>, string]> = [
  [daily({ at: "02:00", timezone: "Europe/London" }), { kind: "daily", at: "02:00", timezone: "Europe/London", dst: "compatible" }, "daily at 02:00 Europe/London"],
  [daily({ at: "01:30", timezone: "America/New_York", dst: "later" }), { kind: "daily", at: "01:30", timezone: "America/New_York", dst: "later" }, "daily at 01:30 America/New_York (dst: later)"],
  [hourly({ minute: 5 }), { kind: "hourly", minute: 5, timezone: "UTC" }, "hourly at :05 UTC"],
  [weekly({ on: "sunday", at: "06:00", timezone: "Australia/Sydney" }), { kind: "weekly", on: "sunday", at: "06:00", timezone: "Australia/Sydney", dst: "compatible" }, "weekly on sunday at 06:00 Australia/Sydney"],
  [monthly({ day: 3, at: "06:00" }), { kind: "monthly", day: 3, at: "06:00", timezone: "UTC", dst: "compatible" }, "monthly on day 3 at 06:00 UTC"],
  [cron("0 */6 * * *", { timezone: "Europe/London" }), { kind: "cron", expression: "0 */6 * * *", timezone: "Europe/London" }, 'cron "0 */6 * * *" Europe/London'],
  [manual({}), { kind: "manual", timezone: "UTC" }, "manual (UTC)"],
];

describe("every kind of timetable", () => {
  it.each(examples.map(([t, json, text]) => [t.kind, t, json, text] as const))(
    "%s writes its full definition, defaults included, as plain JSON and reads it back",
    (_kind, t, json, text) => {
      expect(t.toJSON()).toEqual(json);
      expect(JSON.parse(JSON.stringify(t))).toEqual(json);
      expect(t.describe()).toBe(text);
      const back = timetableFromJSON(json);
      expect(back.toJSON()).toEqual(json);
      expect(back.kind).toBe(t.kind);
      expect(back.timezone).toBe(t.timezone);
      const probe = at("2026-09-01T12:34");
      expect(back.intervalAt(probe)).toEqual(t.intervalAt(probe));
    },
  );

  it.each(examples.filter(([t]) => t.kind !== "manual").map(([t]) => [t.describe(), t] as const))(
    "%s previews n fires in increasing order, all after t",
    (_name, t) => {
      const from = at("2026-10-20T00:00");
      const preview = t.preview(from, 12);
      expect(preview).toHaveLength(12);
      expect(preview[0]).toEqual(t.nextDue(from));
      expect(preview[0]!.firesAt).toBeGreaterThan(from);
      for (let k = 1; k < preview.length; k++) {
        expect(preview[k]!.firesAt).toBeGreaterThan(preview[k - 1]!.firesAt);
        expect(preview[k]!.interval.start).toBe(preview[k - 1]!.interval.end);
      }
      expect(t.preview(from, 0)).toEqual([]);
    },
  );
});

describe("interval keys and descriptions", () => {
  it("writes an interval as ISO instants with the zone's offset", () => {
    const i = daily({ timezone: "Europe/London" }).intervalForDate("2026-09-01");
    expect(intervalKey(i)).toBe("2026-09-01T00:00:00+01:00/2026-09-02T00:00:00+01:00");
    expect(describeInterval(i)).toBe("[2026-09-01 00:00, 2026-09-02 00:00) Europe/London");
  });

  it("tells the two 01:00 hours of a 25-hour day apart", () => {
    const t = hourly({ timezone: "America/New_York" });
    const first = t.intervalAt(at("2026-11-01T05:30:00Z"));
    const second = t.intervalAt(at("2026-11-01T06:30:00Z"));
    expect(intervalKey(first)).toBe("2026-11-01T01:00:00-04:00/2026-11-01T01:00:00-05:00");
    expect(intervalKey(second)).toBe("2026-11-01T01:00:00-05:00/2026-11-01T02:00:00-05:00");
    expect(describeInterval(first)).toBe("[2026-11-01 01:00-04:00, 2026-11-01 01:00-05:00) America/New_York");
  });
});

describe("bad options are refused with a message naming the value", () => {
  it.each<[string, () => unknown, string]>([
    ["an unknown zone", () => daily({ timezone: "Europe/Lodnon" }), 'unknown time zone "Europe/Lodnon"'],
    ["an unknown zone in cron", () => cron("0 * * * *", { timezone: "Europe/Lodnon" }), 'unknown time zone "Europe/Lodnon"'],
    ["an hour past 23", () => daily({ at: "25:00" }), 'bad time "25:00" (expected HH:MM)'],
    ["a minute past 59", () => weekly({ at: "12:60" }), 'bad time "12:60" (expected HH:MM)'],
    ["a time without leading zero", () => monthly({ at: "6:00" }), 'bad time "6:00" (expected HH:MM)'],
    ["a minute offset of 60", () => hourly({ minute: 60 }), "bad minute 60 (expected an integer 0..59)"],
    ["a fractional minute offset", () => hourly({ minute: 1.5 }), "bad minute 1.5"],
    ["day 29", () => monthly({ day: 29 }), "bad day 29 (expected an integer 1..28)"],
    ["day 0", () => monthly({ day: 0 }), "bad day 0"],
    ["an abbreviated weekday", () => weekly({ on: "mon" as never }), 'bad weekday "mon" (expected monday, tuesday'],
    ["an unknown DST policy", () => daily({ dst: "never" as never }), 'bad dst policy "never" (expected compatible, earlier or later)'],
    ["a misspelt option", () => daily({ timzone: "UTC" } as never), 'daily: unknown option "timzone"'],
    ["an unknown kind in JSON", () => timetableFromJSON({ kind: "yearly" }), 'bad schedule kind "yearly"'],
    ["an unknown key in JSON", () => timetableFromJSON({ kind: "hourly", minute: 0, timezone: "UTC", at: "01:00" }), 'hourly: unknown option "at"'],
    ["a cron without expression in JSON", () => timetableFromJSON({ kind: "cron", timezone: "UTC" }), "bad cron expression undefined"],
  ])("%s", (_what, make, message) => {
    expect(make).toThrow(DefinitionError);
    expect(make).toThrow(message);
  });

  it("accepts a weekday in any case and stores it in lower case", () => {
    expect(weekly({ on: "Friday" as never }).toJSON()).toMatchObject({ on: "friday" });
  });
});
