import { describe, expect, it } from "vitest";
import { newRun, tasksOf } from "../../support/shapes.ts";
import { T0, type Harness } from "./harness.ts";

const sorted = <T>(rows: T[]): T[] => [...rows].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));

export function metricsContract(h: Harness): void {
  describe("MetricReads", () => {
    const { store, saveGraph, claim } = h;

    /** p@2026-09-01 running (x claimed in pool db; y, z queued), p@2026-09-03 queued, p@2026-08-30 ended in success. */
    async function seed(): Promise<void> {
      await h.endedRun("2026-08-30", T0 - 60_000);
      await saveGraph("flat", []);
      await store.setPool({ name: "db", slots: 5, at: T0 });
      await store.createRunIfAbsent(newRun({ graphVersion: "flat", tasks: tasksOf(["x", "y", "z"], [], { x: { pool: "db" }, z: { pool: "db" } }) }));
      expect((await claim(1)).map((a) => a.taskId)).toEqual(["x"]);
      await store.createRunIfAbsent(newRun({ runId: "p@2026-09-03", businessDate: "2026-09-03", graphVersion: "flat", createdAt: T0 + 5_000, tasks: tasksOf(["x"], [], { x: { pool: "db" } }) }));
    }

    it("counts live runs by pipeline and state, and recent runs of the intervals from a start", async () => {
      await seed();
      expect(sorted(await store.liveRunCounts())).toEqual([
        { pipelineId: "p", state: "queued", count: 1 },
        { pipelineId: "p", state: "running", count: 1 },
      ]);
      const recent = (fromDay: string) => store.recentRunCounts({ pipelineIds: ["p", "absent"], fromStart: Date.parse(`${fromDay}T00:00:00Z`) });
      expect(sorted(await recent("2026-08-30"))).toEqual([
        { pipelineId: "p", state: "queued", count: 1 },
        { pipelineId: "p", state: "running", count: 1 },
        { pipelineId: "p", state: "success", count: 1 },
      ]);
      expect(sorted(await recent("2026-09-02"))).toEqual([{ pipelineId: "p", state: "queued", count: 1 }]);
      expect(await store.recentRunCounts({ pipelineIds: [], fromStart: 0 })).toEqual([]);
    });

    it("counts the task instances of live runs only, by pipeline, task and state", async () => {
      await seed();
      expect(sorted(await store.liveRunTaskCounts())).toEqual(sorted([
        { pipelineId: "p", taskId: "x", state: "running", count: 1 },
        { pipelineId: "p", taskId: "x", state: "queued", count: 1 },
        { pipelineId: "p", taskId: "y", state: "queued", count: 1 },
        { pipelineId: "p", taskId: "z", state: "queued", count: 1 },
      ]));
    });

    it("counts queued task instances by pool with when the longest-waiting one was queued", async () => {
      await seed();
      expect(sorted(await store.queuedByPool())).toEqual(sorted([
        { pool: "db", queued: 2, oldestQueuedAt: T0 },
        { pool: null, queued: 1, oldestQueuedAt: T0 },
      ]));
    });

    it("claims say since when their task instance was ready: queued, or its retry due (a queue wait's start)", async () => {
      await saveGraph("flat", []);
      await store.createRunIfAbsent(newRun({ graphVersion: "flat", createdAt: T0 - 7_000, tasks: tasksOf(["x"], [], { x: { maxTries: 2 } }) }));
      const [first] = await claim(10, T0);
      expect(first).toMatchObject({ taskId: "x", readySince: T0 - 7_000 });
      await store.finishAttempt(h.finish(first!, { outcome: "failed", retryAt: T0 + 5_000, errorClass: "TaskFailed", errorMessage: "boom" }));
      const [retry] = await claim(10, T0 + 9_000);
      expect(retry).toMatchObject({ taskId: "x", tryNumber: 2, readySince: T0 + 5_000 });
    });

    it("counts unresolved incidents by kind, pipeline and acknowledgement; resolved ones are gone", async () => {
      const incident = (key: string, kind: "late" | "scheduler_down", pipelineId: string | null) =>
        store.openIncident({ key, kind, dataset: null, pipelineId, businessDate: null, runId: null, message: key, notify: [], at: T0 });
      await incident("late:a:1", "late", "p");
      await incident("late:a:2", "late", "p");
      await incident("late:a:3", "late", "p");
      await incident("down:1", "scheduler_down", null);
      await store.resolveIncident("late:a:3", T0 + 1, "published");
      await store.actOnIncident({ kind: "acknowledge", key: "late:a:2", actor: "ana", reason: "mine", until: null, at: T0 + 2 });
      await store.actOnIncident({ kind: "acknowledge", key: "down:1", actor: "ana", reason: "restarting", until: T0 + 100, at: T0 + 2 });
      expect(sorted(await store.openIncidentCounts())).toEqual(sorted([
        { kind: "late", pipelineId: "p", acknowledged: false, ackUntil: null, count: 1 },
        { kind: "late", pipelineId: "p", acknowledged: true, ackUntil: null, count: 1 },
        { kind: "scheduler_down", pipelineId: null, acknowledged: true, ackUntil: T0 + 100, count: 1 },
      ]));
    });
  });
}
