import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { retryDelay, type RetryPolicy } from "../../../src/core/policy/retry.ts";
import { decideTrigger, type UpstreamCounts } from "../../../src/core/policy/trigger-rules.ts";

const up = (success: number, skipped: number, failed: number, total: number): UpstreamCounts => ({ success, skipped, failed, total });

describe("trigger rules", () => {
  it("all_success waits for every parent, fails on any failure, skips on any skip", () => {
    expect(decideTrigger("all_success", up(1, 0, 0, 2))).toEqual({ action: "wait" });
    expect(decideTrigger("all_success", up(2, 0, 0, 2))).toEqual({ action: "run" });
    expect(decideTrigger("all_success", up(0, 0, 1, 2)).action).toBe("upstream_failed");
    expect(decideTrigger("all_success", up(1, 1, 0, 2)).action).toBe("skip");
  });

  it("all_done runs once every parent ended, however it ended", () => {
    expect(decideTrigger("all_done", up(0, 1, 0, 2))).toEqual({ action: "wait" });
    expect(decideTrigger("all_done", up(0, 1, 1, 2))).toEqual({ action: "run" });
  });

  it("one_success runs at the first success and fails when none can come", () => {
    expect(decideTrigger("one_success", up(1, 0, 0, 3))).toEqual({ action: "run" });
    expect(decideTrigger("one_success", up(0, 0, 1, 3))).toEqual({ action: "wait" });
    expect(decideTrigger("one_success", up(0, 1, 2, 3)).action).toBe("upstream_failed");
    expect(decideTrigger("one_success", up(0, 3, 0, 3)).action).toBe("skip");
  });

  it("none_failed lets skips through but not failures", () => {
    expect(decideTrigger("none_failed", up(1, 1, 0, 2))).toEqual({ action: "run" });
    expect(decideTrigger("none_failed", up(0, 0, 1, 2)).action).toBe("upstream_failed");
  });

  it("none_failed_min_one_success needs one real success", () => {
    expect(decideTrigger("none_failed_min_one_success", up(1, 1, 0, 2))).toEqual({ action: "run" });
    expect(decideTrigger("none_failed_min_one_success", up(0, 2, 0, 2)).action).toBe("skip");
  });

  it("always runs at once, and a task without parents runs under any rule", () => {
    expect(decideTrigger("always", up(0, 0, 0, 5))).toEqual({ action: "run" });
    for (const rule of ["all_success", "one_success", "none_failed_min_one_success"] as const) {
      expect(decideTrigger(rule, up(0, 0, 0, 0))).toEqual({ action: "run" });
    }
  });
});

describe("retry delay", () => {
  const policy: RetryPolicy = { retries: 5, retryDelayMs: 60_000, backoff: "exponential", maxRetryDelayMs: 300_000, jitter: 0 };

  it("doubles per retry and stops at the cap", () => {
    expect([2, 3, 4, 5, 6].map((n) => retryDelay(policy, n))).toEqual([60_000, 120_000, 240_000, 300_000, 300_000]);
  });

  it("stays fixed without backoff", () => {
    expect([2, 3, 4].map((n) => retryDelay({ ...policy, backoff: "fixed" }, n))).toEqual([60_000, 60_000, 60_000]);
  });

  it("with jitter, stays between (1 - jitter) x delay and the delay, never over the cap", () => {
    fc.assert(
      fc.property(fc.integer({ min: 2, max: 80 }), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), fc.double({ min: 0, max: 1, noNaN: true }), (nextTry, random, jitter) => {
        const delay = retryDelay({ ...policy, jitter }, nextTry, () => random);
        const plain = retryDelay({ ...policy, jitter: 0 }, nextTry);
        return delay <= plain && delay >= Math.floor(plain * (1 - jitter)) && delay <= policy.maxRetryDelayMs;
      }),
    );
  });
});
