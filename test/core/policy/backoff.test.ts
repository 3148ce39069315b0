import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Clock } from "../../../src/core/model/clock.ts";
import { Backoff, retryWithBackoff } from "../../../src/core/policy/backoff.ts";

/** A clock whose sleeps pass at once and are written down. */
function recordingClock(start = 0): Clock & { pauses: number[] } {
  let now = start;
  const pauses: number[] = [];
  return {
    pauses,
    now: () => now,
    sleep: async (ms, signal) => {
      pauses.push(ms);
      if (!signal?.aborted) now += ms;
    },
  };
}

async function pausesUntilGivingUp(backoff: Backoff, most = 1_000): Promise<number> {
  let tries = 0;
  while (tries < most && (await backoff.again())) tries++;
  return tries;
}

describe("a backoff", () => {
  it("doubles its pause from the first up to the cap, and gives up before the deadline would pass", async () => {
    const clock = recordingClock();
    const backoff = new Backoff({ firstMs: 10, maxMs: 2_000, withinMs: 5_000, clock });
    await pausesUntilGivingUp(backoff);
    expect(clock.pauses).toEqual([10, 20, 40, 80, 160, 320, 640, 1_280, 2_000]);
    // 4,550 ms slept; the next pause (2,000) would end at 6,550, past 5,000: it stops there.
    expect(clock.now()).toBe(4_550);
  });

  it("can try again at once, then pause from a least pause upward (the store's reconnect)", async () => {
    const clock = recordingClock();
    const backoff = new Backoff({ firstMs: 0, minMs: 50, maxMs: 1_000, withinMs: 2_000, clock });
    expect(await pausesUntilGivingUp(backoff)).toBe(6);
    expect(clock.pauses).toEqual([50, 100, 200, 400, 800]); // the first retry slept not at all
  });

  it("keeps a steady pause for ever when the cap is the first pause and there is no deadline", async () => {
    const clock = recordingClock();
    const backoff = new Backoff({ firstMs: 2_000, maxMs: 2_000, withinMs: Infinity, clock });
    expect(await pausesUntilGivingUp(backoff, 50)).toBe(50);
    expect(new Set(clock.pauses)).toEqual(new Set([2_000]));
  });

  it("gives up as soon as its signal aborts, also in the middle of a pause", async () => {
    const stop = new AbortController();
    const clock = recordingClock();
    const backoff = new Backoff({ firstMs: 10, maxMs: 100, withinMs: Infinity, clock, signal: stop.signal });
    expect(await backoff.again()).toBe(true);
    const sleep = clock.sleep;
    clock.sleep = async (ms, signal) => {
      stop.abort();
      await sleep(ms, signal);
    };
    expect(await backoff.again()).toBe(false);
    expect(await backoff.again()).toBe(false);
    expect(clock.pauses).toEqual([10, 20]);
  });

  it("never sleeps past its deadline in total, and never pauses longer than its cap or shorter than before", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 500 }), fc.integer({ min: 1, max: 500 }), fc.integer({ min: 1, max: 5_000 }), fc.integer({ min: 0, max: 60_000 }),
        async (firstMs, minMs, maxMs, withinMs) => {
          const clock = recordingClock(1_000_000);
          await pausesUntilGivingUp(new Backoff({ firstMs: Math.min(firstMs, maxMs), minMs, maxMs, withinMs, clock }), 10_000);
          const slept = clock.pauses.reduce((a, b) => a + b, 0);
          expect(slept).toBeLessThanOrEqual(withinMs);
          clock.pauses.slice(1).forEach((pause, i) => {
            expect(pause).toBeLessThanOrEqual(maxMs);
            expect(pause).toBeGreaterThanOrEqual(Math.min(clock.pauses[i]!, maxMs));
          });
        },
      ),
    );
  });
});

describe("retrying with a backoff", () => {
  const options = (clock: Clock) => ({ firstMs: 10, maxMs: 100, withinMs: 1_000, clock });

  it("returns the first success, after pausing between the failures", async () => {
    const clock = recordingClock();
    let calls = 0;
    const result = await retryWithBackoff(async () => {
      if (++calls < 4) throw new Error(`down ${calls}`);
      return "up";
    }, options(clock));
    expect([result, calls]).toEqual(["up", 4]);
    expect(clock.pauses).toEqual([10, 20, 40]);
  });

  it("gives up with the last error once the time is up", async () => {
    const clock = recordingClock();
    let calls = 0;
    await expect(retryWithBackoff(async () => {
      throw new Error(`down ${++calls}`);
    }, options(clock))).rejects.toThrow(/^down 13$/);
    expect(clock.pauses).toEqual([10, 20, 40, 80, 100, 100, 100, 100, 100, 100, 100, 100]);
    expect(calls).toBe(13);
  });

  it("does not try again after an error it is told is not worth it", async () => {
    const clock = recordingClock();
    let calls = 0;
    const refused = Object.assign(new Error("syntax error"), { code: "42601" });
    await expect(retryWithBackoff(async () => {
      calls++;
      throw refused;
    }, { ...options(clock), retryable: (error) => (error as { code?: string }).code !== "42601" })).rejects.toBe(refused);
    expect([calls, clock.pauses]).toEqual([1, []]);
  });
});
