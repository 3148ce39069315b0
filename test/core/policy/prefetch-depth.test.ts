import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { AUTO_PREFETCH_SHORT_MS, AUTO_PREFETCH_WINDOW, prefetchDepth } from "../../../src/core/policy/prefetch-depth.ts";

const concurrency = fc.integer({ min: 1, max: 64 });
const short = fc.integer({ min: 0, max: AUTO_PREFETCH_SHORT_MS - 1 });
const long = fc.integer({ min: AUTO_PREFETCH_SHORT_MS, max: 3_600_000 });

describe("how deep a worker claims ahead of its free slots", () => {
  it("is the number given, whatever the tasks took", () => {
    fc.assert(fc.property(fc.nat(1000), concurrency, fc.array(fc.nat()), (n, c, recent) => {
      expect(prefetchDepth(n, c, recent)).toBe(n);
    }));
  });

  it("on auto, is none before any task has run", () => {
    fc.assert(fc.property(concurrency, (c) => {
      expect(prefetchDepth("auto", c, [])).toBe(0);
    }));
  });

  it("on auto, is twice the concurrency while most recent tasks are short, and none while most are long", () => {
    fc.assert(fc.property(concurrency, fc.array(fc.oneof(short, long), { minLength: 1, maxLength: 40 }), (c, recent) => {
      // the window is the latest durations: which kind holds its majority decides
      const window = recent.slice(-AUTO_PREFETCH_WINDOW);
      const shortOnes = window.filter((ms) => ms < AUTO_PREFETCH_SHORT_MS).length;
      const depth = prefetchDepth("auto", c, recent);
      if (shortOnes > window.length / 2) expect(depth).toBe(2 * c);
      if (shortOnes < window.length / 2) expect(depth).toBe(0);
      expect([0, 2 * c]).toContain(depth);
    }));
  });

  it("on auto, follows the latest tasks only: long ones before a window of short ones do not count", () => {
    const recent = [...Array(50).fill(60_000), ...Array(AUTO_PREFETCH_WINDOW).fill(2)];
    expect(prefetchDepth("auto", 10, recent)).toBe(20);
    expect(prefetchDepth("auto", 10, [...recent, ...Array(AUTO_PREFETCH_WINDOW / 2 + 1).fill(60_000)])).toBe(0);
  });
});
