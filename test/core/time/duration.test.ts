import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { DefinitionError } from "../../../src/core/model/errors.ts";
import { formatDuration, parseDuration } from "../../../src/core/time/duration.ts";

describe("parseDuration", () => {
  it.each([
    ["500ms", 500],
    ["30s", 30_000],
    ["5m", 300_000],
    ["1h30m", 5_400_000],
    ["1h 30m", 5_400_000],
    ["2d", 172_800_000],
    ["1d2h3m4s5ms", 93_784_005],
    ["1.5s", 1_500],
    ["  10s ", 10_000],
    ["0s", 0],
  ])("reads %j as %d ms", (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it("takes a non-negative number as milliseconds already", () => {
    expect(parseDuration(0)).toBe(0);
    expect(parseDuration(2500)).toBe(2500);
  });

  it.each(["", "   ", "5 minutes", "1x", "500", "m", "1m30m", "30s1m", "-5s", "5M", "1h30"])(
    "rejects %j, naming it",
    (text) => {
      expect(() => parseDuration(text)).toThrow(DefinitionError);
      expect(() => parseDuration(text)).toThrow(`bad duration ${JSON.stringify(text)} (expected e.g. 500ms, 30s, 5m, 1h30m, 2d)`);
    },
  );

  it.each([-1, Number.NaN, Infinity])("rejects the number %d", (n) => {
    expect(() => parseDuration(n)).toThrow(DefinitionError);
  });

  it("names what the duration was for", () => {
    expect(() => parseDuration("5 minutes", "timeout")).toThrow(
      'bad timeout "5 minutes" (expected e.g. 500ms, 30s, 5m, 1h30m, 2d)',
    );
  });
});

describe("formatDuration", () => {
  it.each([
    [0, "0ms"],
    [250, "250ms"],
    [30_000, "30s"],
    [5_400_000, "1h30m"],
    [172_800_000, "2d"],
    [61_001, "1m1s1ms"],
  ])("writes %d ms as %j", (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });

  it("is read back by parseDuration as the same number", () => {
    fc.assert(
      fc.property(fc.nat({ max: 10 * 365 * 86_400_000 }), (ms) => parseDuration(formatDuration(ms)) === ms),
      { numRuns: 200 },
    );
  });
});
