import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { estimateMappedWork, median } from "../../../src/core/policy/mapped-work.ts";

describe("a backfill's mapped work, estimated from history", () => {
  it("expects each date to have the median item count of the last completed runs, and says the last one", () => {
    const counts = new Map([["load", [1_180, 1_200, 1_250, 900, 1_210]], ["check", [1_180, 1_200, 1_250, 900, 1_210]]]);
    const e = estimateMappedWork(["load", "check", "fresh"], counts, 5);
    expect(e.tasks).toEqual([
      { taskId: "load", perDate: 1_200, last: 1_180, runsSeen: 5, instances: 6_000 },
      { taskId: "check", perDate: 1_200, last: 1_180, runsSeen: 5, instances: 6_000 },
      { taskId: "fresh", perDate: null, last: null, runsSeen: 0, instances: null },
    ]);
    expect(e.instances).toBe(12_000);
    expect(e.tasksWithoutHistory).toEqual(["fresh"]);
    expect(e.basis).toMatch(/^estimate: the median item count .* times 5 dates$/);
  });

  it("the median lies within the counts seen, and the total is the sum of the tasks' per-date counts times the dates", () => {
    fc.assert(fc.property(fc.array(fc.array(fc.nat(100_000), { maxLength: 20 }), { maxLength: 5 }), fc.nat(400), (histories, dates) => {
      const tasks = histories.map((_, i) => `t${i}`);
      const e = estimateMappedWork(tasks, new Map(histories.map((h, i) => [`t${i}`, h])), dates);
      for (const [i, h] of histories.entries()) {
        const t = e.tasks[i]!;
        if (h.length === 0) {
          expect(t.perDate).toBeNull();
        } else {
          expect(t.perDate).toBeGreaterThanOrEqual(Math.min(...h));
          expect(t.perDate).toBeLessThanOrEqual(Math.max(...h));
          expect(t.last).toBe(h[0]);
        }
      }
      expect(e.instances).toBe(e.tasks.reduce((s, t) => s + (t.perDate ?? 0) * dates, 0));
    }));
    expect(median([3, 1, 2])).toBe(2);
    expect(median([1, 2])).toBe(2);
    expect(median([0, 0, 10, 10])).toBe(5);
  });
});
