import { describe, expect, it } from "vitest";
import { newRun, tasksOf } from "../../support/shapes.ts";
import { T0, type Harness } from "./harness.ts";

export function backfillsContract(h: Harness): void {
  describe("BackfillStore", () => {
    const { store, saveGraph, claim, finish } = h;

    it("stores a backfill with its plan once, and tracks its runs", async () => {
      const item = (d: string, action: "create" | "refuse") => ({ businessDate: d, intervalStart: Date.parse(`${d}T00:00:00Z`), intervalEnd: Date.parse(`${d}T00:00:00Z`) + 86_400_000, action, why: action, runId: `p@${d}` });
      const request = {
        backfillId: "bf_1", pipelineId: "p", fromDate: "2026-09-01", toDate: "2026-09-02", reprocess: "none" as const, maxActiveRuns: 2,
        backwards: false, taskIds: null, actor: "ana", reason: "rebuild", graphVersion: "v1", estimate: {},
        items: [item("2026-09-01", "create"), item("2026-09-02", "refuse")], at: T0,
      };
      const created = await store.createBackfill(request);
      expect(created.created).toBe(true);
      expect(created.backfill.codeChoice).toBe("latest");
      expect((await store.createBackfill({ ...request, backfillId: "bf_2" })).backfill.backfillId).toBe("bf_1");
      expect((await store.pendingBackfillItems("bf_1", 10)).map((i) => i.businessDate)).toEqual(["2026-09-01"]);
      await saveGraph();
      await store.createRunIfAbsent(newRun({ backfillId: "bf_1", trigger: "backfill", tasks: tasksOf(["a"]) }));
      await store.markBackfillItemStarted("bf_1", 0);
      expect(await store.countLiveBackfillRuns("bf_1")).toBe(1);
      expect(await store.backfillProgress("bf_1")).toEqual({ planned: 1, notStarted: 0, queued: 1, running: 0, succeeded: 0, failed: 0, untouched: 1 });
      const cancelled = await store.cancelBackfill("bf_1", "wrong range", T0 + 1);
      expect(cancelled.state).toBe("cancelled");
      expect((await store.getRun("p@2026-09-01"))!.state).toBe("failed");
    });

    it("keeps the code a backfill chose for the runs it runs again", async () => {
      const request = {
        backfillId: "bf_same", pipelineId: "p", fromDate: "2026-09-01", toDate: "2026-09-01", reprocess: "all" as const, maxActiveRuns: 1,
        backwards: false, taskIds: null, actor: "ana", reason: "same code", graphVersion: "v1", estimate: {}, items: [], at: T0, codeChoice: "same" as const,
      };
      expect((await store.createBackfill(request)).backfill.codeChoice).toBe("same");
      expect((await store.getBackfill("bf_same"))?.codeChoice).toBe("same");
    });

    it("reads a backfill, its plan and the list of backfills, and records its state changes", async () => {
      await saveGraph();
      const plan = {
        pipelineId: "p", fromDate: "2026-09-01", toDate: "2026-09-02", reprocess: "none" as const, maxActiveRuns: 1, backwards: false,
        taskIds: null, actor: "ana", reason: "late files", graphVersion: "v1", estimate: {}, at: T0,
        items: [
          { businessDate: "2026-09-01", intervalStart: 0, intervalEnd: 1, action: "create" as const, why: "no run yet", runId: "p@2026-09-01" },
          { businessDate: "2026-09-02", intervalStart: 1, intervalEnd: 2, action: "refuse" as const, why: "frozen", runId: "p@2026-09-02" },
        ],
      };
      await store.createBackfill({ ...plan, backfillId: "bf_1" });
      expect(await store.getBackfill("bf_1")).toMatchObject({ backfillId: "bf_1", state: "running", reason: "late files", endedAt: null });
      expect(await store.getBackfill("bf_none")).toBeNull();
      expect((await store.backfillItems("bf_1")).map((i) => [i.seq, i.businessDate, i.action, i.why])).toEqual([
        [0, "2026-09-01", "create", "no run yet"],
        [1, "2026-09-02", "refuse", "frozen"],
      ]);
      expect((await store.setBackfillState("bf_1", "paused", T0 + 1)).state).toBe("paused");
      expect((await store.listBackfills({ live: true })).map((b) => b.backfillId)).toEqual(["bf_1"]);
      const done = await store.setBackfillState("bf_1", "completed", T0 + 2);
      expect([done.state, done.endedAt]).toEqual(["completed", T0 + 2]);
      expect(await store.listBackfills({ live: true })).toEqual([]);
      expect((await store.listBackfills({ pipelineId: "p" })).map((b) => b.backfillId)).toEqual(["bf_1"]);
      expect(await store.listBackfills({ pipelineId: "other" })).toEqual([]);
      await expect(store.setBackfillState("bf_none", "paused", T0)).rejects.toThrow(/no backfill bf_none/);
    });

    it("estimates from the durations of each task's latest successful attempts", async () => {
      await store.createRunIfAbsent(newRun({ tasks: tasksOf(["a", "b"]) }));
      const claimed = await claim();
      await store.finishAttempt(finish(claimed.find((c) => c.taskId === "a")!, { now: T0 + 4_000 }));
      await store.finishAttempt(finish(claimed.find((c) => c.taskId === "b")!, { now: T0 + 1_000, outcome: "failed", retryable: false }));
      expect(await store.taskDurations("p", 5)).toEqual(new Map([["a", [4_000]]]));
      expect(await store.taskDurations("other", 5)).toEqual(new Map());
    });

    it("reads the item counts of mapped tasks in the latest ended runs, newest first, for a preview's estimate of mapped work", async () => {
      await saveGraph("v1", []);
      const items = (n: number) => Array.from({ length: n }, (_, i) => ({ key: `k${i}`, item: JSON.stringify(`k${i}`) }));
      for (const [day, n] of [["2026-09-01", 1], ["2026-09-02", 3], ["2026-09-03", 2], ["2026-09-04", 5]] as const) {
        await store.createRunIfAbsent(newRun({ businessDate: day, tasks: tasksOf(["load"]) }));
        const [load] = await claim();
        await store.finishAttempt(finish(load!, { map: { items: items(n), maxActive: null } }));
        // the last run is still running: its count is not history yet
        if (day === "2026-09-04") break;
        for (let batch = await claim(); batch.length > 0; batch = await claim()) for (const a of batch) await store.finishAttempt(finish(a));
        expect((await store.getRun(`p@${day}`))!.state).toBe("success");
      }
      expect(await store.mappedItemCounts("p", ["load", "other"], 20)).toEqual(new Map([["load", [2, 3, 1]]]));
      expect(await store.mappedItemCounts("p", ["load"], 2)).toEqual(new Map([["load", [2, 3]]]));
      expect(await store.mappedItemCounts("q", ["load"], 20)).toEqual(new Map());
    });
  });
}
