import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { didNotRun, judgeUnrunInterval, type SchedulerPresence, type UnrunInterval } from "../../../src/core/policy/expected-run.ts";

const HOUR = 3_600_000;

const presence: fc.Arbitrary<SchedulerPresence> = fc.oneof(
  fc.record({ live: fc.constant(true as const), holder: fc.constant("s1"), leadingSince: fc.oneof(fc.constant(-Infinity), fc.integer({ min: 0, max: 100 * HOUR })) }),
  fc.record({ live: fc.constant(false as const), holder: fc.constant(null), lastLeadAt: fc.constant(null), note: fc.constant("no scheduler") }),
);

const facts: fc.Arbitrary<UnrunInterval> = fc
  .record({
    intervalStart: fc.integer({ min: 0, max: 50 * HOUR }),
    fireDelay: fc.integer({ min: 0, max: 10 * HOUR }),
    age: fc.integer({ min: 0, max: 50 * HOUR }),
    graceMs: fc.integer({ min: 0, max: 2 * HOUR }),
    paused: fc.boolean(),
    cursorOffset: fc.option(fc.integer({ min: -48, max: 48 }), { nil: null }),
    liveRuns: fc.integer({ min: 0, max: 5 }),
    maxActiveRuns: fc.integer({ min: 1, max: 5 }),
    progressAge: fc.option(fc.integer({ min: 0, max: 50 * HOUR }), { nil: null }),
    scheduler: presence,
  })
  .map((r) => {
    const firesAt = r.intervalStart + r.fireDelay;
    const now = firesAt + r.age;
    return {
      intervalStart: r.intervalStart, firesAt, now, graceMs: r.graceMs, paused: r.paused, pausedNote: null,
      cursor: r.cursorOffset === null ? null : r.intervalStart + r.cursorOffset * HOUR,
      liveRuns: r.liveRuns, maxActiveRuns: r.maxActiveRuns,
      lastProgressAt: r.progressAge === null ? null : now - r.progressAge,
      scheduler: r.scheduler,
    };
  });

describe("a due interval with no run", () => {
  it("is pending, never missing, while a live scheduler waits for the run cap on an unpaused pipeline it has not passed", () => {
    fc.assert(fc.property(facts, (f) => {
      const full = { ...f, paused: false, cursor: null, liveRuns: f.maxActiveRuns, scheduler: { live: true as const, holder: "s1", leadingSince: -Infinity } };
      expect(judgeUnrunInterval(full)).toMatchObject({ status: "pending", cause: "run_cap" });
      expect(didNotRun(full)).toBe(false);
    }));
  });

  it("is pending while a live scheduler moved the pipeline's cursor within the grace (a catch-up in order)", () => {
    fc.assert(fc.property(facts, fc.integer({ min: 0, max: 2 * HOUR }), (f, since) => {
      const moving = { ...f, paused: false, cursor: null, lastProgressAt: f.now - Math.min(since, f.graceMs - 1), scheduler: { live: true as const, holder: "s1", leadingSince: -Infinity } };
      fc.pre(f.graceMs > 0);
      expect(judgeUnrunInterval(moving).status).toBe("pending");
      expect(didNotRun(moving)).toBe(false);
    }));
  });

  it("is missing whenever the pipeline is paused, and did not run once the grace after its fire time passed", () => {
    fc.assert(fc.property(facts, (f) => {
      const paused = { ...f, paused: true };
      expect(judgeUnrunInterval(paused)).toMatchObject({ status: "missing", cause: "paused" });
      expect(didNotRun(paused)).toBe(paused.now >= paused.firesAt + paused.graceMs);
    }));
  });

  it("never opens a did-not-run incident within the grace after its fire time, nor one per run when no scheduler leads", () => {
    fc.assert(fc.property(facts, (f) => {
      const verdict = judgeUnrunInterval(f);
      if (f.now < f.firesAt + f.graceMs) expect(didNotRun(f)).toBe(false);
      if (!f.scheduler.live && !f.paused && !(f.cursor !== null && f.cursor > f.intervalStart)) {
        expect(verdict.cause).toBe("no_scheduler");
        expect(didNotRun(f)).toBe(false);
      }
    }));
  });

  it("is missing only for a reason: paused, passed over, no scheduler, or no progress for longer than the grace", () => {
    fc.assert(fc.property(facts, (f) => {
      const verdict = judgeUnrunInterval(f);
      if (verdict.status !== "missing") return;
      const passedOver = f.cursor !== null && f.cursor > f.intervalStart;
      const stalled = f.scheduler.live && f.liveRuns < f.maxActiveRuns && f.now >= f.firesAt + f.graceMs &&
        f.now >= Math.max(f.lastProgressAt ?? -Infinity, f.scheduler.leadingSince) + f.graceMs;
      expect(f.paused || passedOver || !f.scheduler.live || stalled).toBe(true);
    }));
  });
});
