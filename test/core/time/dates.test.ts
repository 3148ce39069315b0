import fc from "fast-check";
import { Temporal } from "temporal-polyfill";
import { describe, expect, it } from "vitest";
import { DefinitionError } from "../../../src/core/model/errors.ts";
import {
  addDays,
  localDate,
  assertTimeZone,
  datesBetween,
  formatInstant,
  parseBusinessDate,
  parseInstant,
  startOfDay,
  toZoned,
} from "../../../src/core/time/dates.ts";

describe("parseBusinessDate", () => {
  it("accepts a real date, including a leap day, and returns it unchanged", () => {
    expect(parseBusinessDate("2026-09-01")).toBe("2026-09-01");
    expect(parseBusinessDate("2028-02-29")).toBe("2028-02-29");
    expect(parseBusinessDate("2000-02-29")).toBe("2000-02-29");
  });

  it.each(["2027-02-29", "2026-02-30", "2026-04-31", "2026-13-01", "2026-00-10", "1900-02-29"])(
    "rejects %s as not a calendar date",
    (s) => {
      expect(() => parseBusinessDate(s)).toThrow(DefinitionError);
      expect(() => parseBusinessDate(s)).toThrow(`bad date "${s}": not a calendar date (expected YYYY-MM-DD)`);
    },
  );

  it.each(["2026-9-1", "2026/09/01", "20260901", "2026-09-01T00:00", " 2026-09-01", ""])("rejects the shape %j", (s) => {
    expect(() => parseBusinessDate(s)).toThrow(`bad date ${JSON.stringify(s)} (expected YYYY-MM-DD)`);
  });
});

describe("assertTimeZone", () => {
  it("accepts IANA names and UTC, normalising case", () => {
    expect(assertTimeZone("Europe/London")).toBe("Europe/London");
    expect(assertTimeZone("UTC")).toBe("UTC");
    expect(assertTimeZone("utc")).toBe("UTC");
    expect(assertTimeZone("america/new_york")).toBe("America/New_York");
  });

  it("rejects a misspelt zone by name", () => {
    expect(() => assertTimeZone("Europe/Lodnon")).toThrow(DefinitionError);
    expect(() => assertTimeZone("Europe/Lodnon")).toThrow('unknown time zone "Europe/Lodnon"');
  });

  it("rejects fixed offsets and empty names, which carry no DST rules", () => {
    expect(() => assertTimeZone("+01:00")).toThrow('unknown time zone "+01:00"');
    expect(() => assertTimeZone("")).toThrow(DefinitionError);
  });
});

describe("parseInstant", () => {
  it("reads an ISO instant with Z or an offset regardless of the zone", () => {
    expect(parseInstant("2026-09-01T00:00:00Z", "Europe/London")).toBe(Date.UTC(2026, 8, 1));
    expect(parseInstant("2026-09-01T02:00+01:00", "America/New_York")).toBe(Date.UTC(2026, 8, 1, 1));
    expect(parseInstant("2026-09-01T00:00:00.250Z", "UTC")).toBe(Date.UTC(2026, 8, 1) + 250);
  });

  it("reads a local date-time in the zone", () => {
    expect(parseInstant("2026-09-01T02:00", "Europe/London")).toBe(Date.UTC(2026, 8, 1, 1));
    expect(parseInstant("2026-09-01 02:00:30", "Europe/London")).toBe(Date.UTC(2026, 8, 1, 1, 0, 30));
  });

  it("reads a bare date as the start of that day, which is 01:00 where midnight does not exist", () => {
    expect(parseInstant("2026-09-01", "Europe/London")).toBe(Date.UTC(2026, 7, 31, 23));
    expect(parseInstant("2018-11-04", "America/Sao_Paulo")).toBe(Date.UTC(2018, 10, 4, 3));
  });

  it("moves a local time in the spring gap forward and takes the first of a repeated time", () => {
    expect(parseInstant("2026-03-29T01:30", "Europe/London")).toBe(Date.UTC(2026, 2, 29, 1, 30));
    expect(parseInstant("2026-11-01T01:30", "America/New_York")).toBe(Date.UTC(2026, 10, 1, 5, 30));
  });

  it.each(["yesterday", "2026-02-30", "2026-02-30T10:00", "2026-09-01T25:00", "2026-09-01T10", ""])(
    "rejects %j, naming it",
    (s) => {
      expect(() => parseInstant(s, "UTC")).toThrow(DefinitionError);
      expect(() => parseInstant(s, "UTC")).toThrow(`bad instant ${JSON.stringify(s)}`);
    },
  );

  it("rejects an unknown zone", () => {
    expect(() => parseInstant("2026-09-01", "Mars/Olympus")).toThrow('unknown time zone "Mars/Olympus"');
  });
});

describe("calendar arithmetic", () => {
  it("adds days across month ends and leap days", () => {
    expect(addDays("2028-02-28", 1)).toBe("2028-02-29");
    expect(addDays("2027-02-28", 1)).toBe("2027-03-01");
    expect(addDays("2026-12-31", 1)).toBe("2027-01-01");
    expect(addDays("2026-03-01", -1)).toBe("2026-02-28");
    expect(addDays("2026-09-01", 0)).toBe("2026-09-01");
  });

  it("adds days as Temporal does, for any date and any count", () => {
    fc.assert(fc.property(fc.date({ min: new Date("0001-01-01T00:00:00Z"), max: new Date("9999-12-31T00:00:00Z"), noInvalidDate: true }), fc.integer({ min: -800_000, max: 800_000 }), (instant, n) => {
      const date = instant.toISOString().slice(0, 10);
      expect(addDays(date, n)).toBe(Temporal.PlainDate.from(date).add({ days: n }).toString());
    }), { numRuns: 2_000 });
    expect(addDays("0001-01-01", -1)).toBe("0000-12-31");
    expect(addDays("0099-12-31", 1)).toBe("0100-01-01");
  });

  it("accepts every calendar date and only those, as Temporal does", () => {
    fc.assert(fc.property(fc.integer({ min: 0, max: 9999 }), fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 31 }), (year, month, day) => {
      const text = `${String(year).padStart(4, "0")}-${String(month).padStart(2, "0")}-${String(day).padStart(2, "0")}`;
      let exists = true;
      try {
        Temporal.PlainDate.from({ year, month, day }, { overflow: "reject" });
      } catch {
        exists = false;
      }
      if (exists) expect(parseBusinessDate(text)).toBe(text);
      else expect(() => parseBusinessDate(text)).toThrow("not a calendar date");
    }), { numRuns: 3_000 });
  });

  it("names an instant's local date as Temporal does, whatever instants were asked before", () => {
    const zones = ["UTC", "Europe/Berlin", "America/Sao_Paulo", "Pacific/Apia", "Australia/Lord_Howe", "America/New_York"];
    const around = Date.UTC(2011, 11, 29);
    fc.assert(fc.property(fc.array(fc.tuple(fc.constantFrom(...zones), fc.integer({ min: -3 * 86_400_000, max: 400 * 86_400_000 })), { minLength: 1, maxLength: 40 }), (asks) => {
      for (const [zone, offset] of asks) {
        const ms = around + offset;
        expect(localDate(ms, zone)).toBe(Temporal.Instant.fromEpochMilliseconds(ms).toZonedDateTimeISO(zone).toPlainDate().toString());
      }
    }), { numRuns: 300 });
  });

  it("lists dates between two dates, both included", () => {
    expect(datesBetween("2028-02-27", "2028-03-01")).toEqual(["2028-02-27", "2028-02-28", "2028-02-29", "2028-03-01"]);
    expect(datesBetween("2026-09-01", "2026-09-01")).toEqual(["2026-09-01"]);
    expect(datesBetween("2026-09-02", "2026-09-01")).toEqual([]);
    expect(datesBetween("2024-01-01", "2026-12-31")).toHaveLength(366 + 365 + 365);
  });

  it("rejects bad dates in arithmetic too", () => {
    expect(() => addDays("2027-02-29", 1)).toThrow(DefinitionError);
    expect(() => datesBetween("2026-09-01", "2026-09-31")).toThrow('bad date "2026-09-31"');
  });

  it("knows the start of a day whose midnight does not exist, and of a day a zone skipped", () => {
    expect(startOfDay("2018-11-04", "America/Sao_Paulo")).toBe(Date.UTC(2018, 10, 4, 3));
    // Samoa jumped from 2011-12-29 straight to 2011-12-31.
    expect(startOfDay("2011-12-30", "Pacific/Apia")).toBe(startOfDay("2011-12-31", "Pacific/Apia"));
  });
});

describe("formatInstant", () => {
  it("writes local date and minutes followed by the zone", () => {
    expect(formatInstant(Date.UTC(2026, 8, 2, 1), "Europe/London")).toBe("2026-09-02 02:00 Europe/London");
    expect(formatInstant(Date.UTC(2026, 8, 2, 1), "UTC")).toBe("2026-09-02 01:00 UTC");
  });

  it("adds seconds (and milliseconds) only when they are not zero", () => {
    expect(formatInstant(Date.UTC(2026, 8, 2, 1, 0, 5), "UTC")).toBe("2026-09-02 01:00:05 UTC");
    expect(formatInstant(Date.UTC(2026, 8, 2, 1, 0, 0, 7), "UTC")).toBe("2026-09-02 01:00:00.007 UTC");
  });

  it("adds the offset to a wall-clock time that occurs twice, so the two are told apart", () => {
    expect(formatInstant(Date.UTC(2026, 10, 1, 5, 30), "America/New_York")).toBe("2026-11-01 01:30-04:00 America/New_York");
    expect(formatInstant(Date.UTC(2026, 10, 1, 6, 30), "America/New_York")).toBe("2026-11-01 01:30-05:00 America/New_York");
  });

  it("converts to a Temporal.ZonedDateTime in the zone", () => {
    const z = toZoned(Date.UTC(2026, 2, 29, 1), "Europe/London");
    expect(z.hour).toBe(2);
    expect(z.offset).toBe("+01:00");
    expect(z.timeZoneId).toBe("Europe/London");
  });
});
