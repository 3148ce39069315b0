import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { GROW_AFTER_MS, TASK_CODE_BUSY_MS, TASK_HOST_WINDOW, taskHostsToStart, type TaskHostDemand } from "../../../src/core/policy/task-host-growth.ts";

const instant = fc.double({ min: 0, max: TASK_CODE_BUSY_MS, maxExcluded: true, noNaN: true });
const busy = fc.double({ min: TASK_CODE_BUSY_MS, max: 3_600_000, noNaN: true });

/** A pool's state: hosts alive within its size, attempts waiting, of which some urgent and some waited long. */
const demand = fc
  .record({
    size: fc.integer({ min: 1, max: 64 }),
    aliveShare: fc.double({ min: 0, max: 1, noNaN: true }),
    waiting: fc.nat(200),
    urgentShare: fc.double({ min: 0, max: 1, noNaN: true }),
    longShare: fc.double({ min: 0, max: 1, noNaN: true }),
    bootingShare: fc.double({ min: 0, max: 1, noNaN: true }),
    currentShare: fc.double({ min: 0, max: 1, noNaN: true }),
    recentCodeMs: fc.array(fc.oneof(instant, busy), { maxLength: 40 }),
    longestRunningMs: fc.nat(10_000),
  })
  .map((r): TaskHostDemand => {
    const alive = Math.floor(r.aliveShare * r.size);
    const urgent = Math.floor(r.urgentShare * r.waiting);
    return {
      size: r.size, alive, current: Math.floor(r.currentShare * alive), booting: Math.floor(r.bootingShare * alive), waiting: r.waiting, urgent,
      waitedLong: Math.floor(r.longShare * (r.waiting - urgent)), recentCodeMs: r.recentCodeMs, longestRunningMs: r.longestRunningMs,
    };
  });

describe("how many task hosts a pool starts", () => {
  it("never more than its size leaves room for, and none while nothing waits", () => {
    fc.assert(fc.property(demand, (d) => {
      const start = taskHostsToStart(d);
      expect(start).toBeGreaterThanOrEqual(0);
      expect(d.alive + start).toBeLessThanOrEqual(d.size);
      if (d.waiting === 0) expect(start).toBe(0);
    }));
  });

  it("starts the first host of the current pipelines at once, whatever else holds", () => {
    fc.assert(fc.property(demand, (d) => {
      const first = { ...d, current: 0, booting: 0, waiting: Math.max(1, d.waiting) };
      if (first.alive < first.size) expect(taskHostsToStart(first)).toBeGreaterThanOrEqual(1);
    }));
  });

  it("gives every attempt taken back from behind a slow one a host, beyond those starting", () => {
    fc.assert(fc.property(demand, (d) => {
      const start = taskHostsToStart(d);
      expect(start).toBeGreaterThanOrEqual(Math.min(d.size - d.alive, d.urgent - d.booting));
    }));
  });

  it("starts none for attempts that waited while the hosts ran instant task code: the machine, not the hosts, held them", () => {
    fc.assert(fc.property(demand, fc.array(instant, { minLength: 1, maxLength: 40 }), fc.nat(GROW_AFTER_MS - 1), (d, recent, running) => {
      const calm = { ...d, current: Math.max(1, d.current), urgent: 0, recentCodeMs: recent, longestRunningMs: running };
      if (calm.alive >= 1) expect(taskHostsToStart(calm)).toBe(0);
    }));
  });

  it("starts one for each attempt that waited long while task code holds the hosts (busy median, or one running long)", () => {
    fc.assert(fc.property(demand, fc.array(busy, { minLength: TASK_HOST_WINDOW, maxLength: 40 }), (d, recent) => {
      const held = { ...d, current: Math.max(1, d.current), recentCodeMs: recent };
      expect(taskHostsToStart(held)).toBe(Math.min(d.size - d.alive, Math.max(0, d.urgent + d.waitedLong - d.booting)));
      const running = { ...d, current: Math.max(1, d.current), recentCodeMs: [], longestRunningMs: GROW_AFTER_MS };
      expect(taskHostsToStart(running)).toBe(Math.min(d.size - d.alive, Math.max(0, d.urgent + d.waitedLong - d.booting)));
    }));
  });
});
