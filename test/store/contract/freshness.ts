import { describe, expect, it } from "vitest";
import { newRun, tasksOf } from "../../support/shapes.ts";
import { T0, type Harness } from "./harness.ts";

export function freshnessContract(h: Harness): void {
  describe("FreshnessStore", () => {
    const { store, saveGraph, claim, finish, createStandardRun } = h;

    it("publishes a business date in the finishing transaction, keeping every publication", async () => {
      await createStandardRun();
      for (const n of [1, 2]) {
        const [a] = await claim(10, T0 + n);
        await store.finishAttempt(finish(a!, { now: T0 + n * 1_000, summary: JSON.stringify({ rows: 3 }), publishes: [{ dataset: "orders_daily", emptyReason: null }] }));
        if (n === 1) await store.rerun({ runId: "p@2026-09-01", graphVersion: "v1", tasks: tasksOf(["a", "b", "c", "d"], [["a", "b"], ["b", "c"], ["a", "d"]]), taskIds: ["a"], params: {}, at: T0 + 1_500 });
      }
      const [row] = await store.listFreshness("orders_daily", "2026-09-01", "2026-09-30");
      expect(row).toMatchObject({ businessDate: "2026-09-01", publishedAt: T0 + 2_000, firstPublishedAt: T0 + 1_000, summary: { rows: 3 } });
      expect((await store.freshnessHistory("orders_daily", "2026-09-01")).map((h) => h.publishedAt)).toEqual([T0 + 1_000, T0 + 2_000]);
    });

    it("opens an incident once, ever, and queues one alert per notifier for opening and resolving", async () => {
      const incident = { key: "late:orders:2026-09-01", kind: "late" as const, dataset: "orders", pipelineId: "p", businessDate: "2026-09-01", runId: null, message: "late", notify: ["hook", "log"], at: T0 };
      expect(await store.openIncident(incident)).toBe(true);
      expect(await store.openIncident(incident)).toBe(false);
      expect((await store.dueAlerts(T0, 10)).map((a) => `${a.event} ${a.notifier}`)).toEqual(["open hook", "open log"]);
      expect(await store.resolveIncident(incident.key, T0 + 1, "published")).toBe(true);
      expect(await store.resolveIncident(incident.key, T0 + 2, "published")).toBe(false);
      expect(await store.openIncident(incident)).toBe(false);
      const [first] = await store.dueAlerts(T0 + 1, 10);
      await store.recordAlertDelivery(first!.id, { at: T0 + 1, error: "HTTP 503", nextAttemptAt: T0 + 60_000 });
      expect((await store.dueAlerts(T0 + 1, 10)).map((a) => `${a.event} ${a.notifier}`)).toEqual(["open log", "resolve hook", "resolve log"]);
    });

    it("records how each publication's run was triggered, with what it wrote", async () => {
      await saveGraph("flat", []);
      await store.createRunIfAbsent(newRun({ graphVersion: "flat", trigger: "schedule", tasks: tasksOf(["a"]) }));
      const publish = async (now: number, rows: number) => {
        const [a] = await claim(10, now);
        await store.finishAttempt(finish(a!, { now, summary: JSON.stringify({ rows }), publishes: [{ dataset: "orders_daily", emptyReason: null }] }));
      };
      await publish(T0, 3);
      await store.rerun({ runId: "p@2026-09-01", graphVersion: "flat", tasks: tasksOf(["a"]), params: {}, at: T0 + 10, restate: { triggeredBy: "scheduler", reason: "window", endedBefore: T0 + 5 } });
      await publish(T0 + 20, 4);
      expect((await store.freshnessHistory("orders_daily", "2026-09-01")).map((h) => [h.trigger, h.summary, h.publishedAt])).toEqual([
        ["schedule", { rows: 3 }, T0], ["restate", { rows: 4 }, T0 + 20],
      ]);
      const [row] = await store.listFreshness("orders_daily", "2026-09-01", "2026-09-01");
      expect(row).toMatchObject({ firstPublishedAt: T0, publishedAt: T0 + 20 });
    });

    it("lists incidents, open ones alone when asked, and the runs that failed since a time", async () => {
      const incident = { kind: "late" as const, dataset: "orders", pipelineId: "p", businessDate: "2026-09-01", runId: null, message: "late", notify: [], at: T0 };
      await store.openIncident({ ...incident, key: "late:orders:2026-09-01" });
      await store.openIncident({ ...incident, key: "late:orders:2026-09-02", businessDate: "2026-09-02", at: T0 + 1 });
      await store.resolveIncident("late:orders:2026-09-01", T0 + 2, "published");
      expect((await store.listIncidents({})).map((i) => i.key).sort()).toEqual(["late:orders:2026-09-01", "late:orders:2026-09-02"]);
      expect((await store.listIncidents({ open: true })).map((i) => i.key)).toEqual(["late:orders:2026-09-02"]);

      await store.createRunIfAbsent(newRun({ tasks: tasksOf(["a"]) }));
      const [a] = await claim();
      await store.finishAttempt(finish(a!, { outcome: "failed", retryable: false, now: T0 + 3_000 }));
      expect((await store.failedRunsSince(T0 + 3_000)).map((r) => r.runId)).toEqual(["p@2026-09-01"]);
      expect(await store.failedRunsSince(T0 + 3_001)).toEqual([]);
    });
  });
}
