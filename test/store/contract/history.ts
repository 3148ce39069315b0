import { describe, expect, it } from "vitest";
import { newRun, tasksOf } from "../../support/shapes.ts";
import { T0, type Harness } from "./harness.ts";

export function historyContract(h: Harness): void {
  describe("HistoryReads", () => {
    const { store, saveGraph, claim, finish } = h;

    const incident = (key: string, pipelineId: string | null, notify: string[], at: number) => ({
      key, kind: "late" as const, dataset: "orders", pipelineId, businessDate: "2026-09-01", runId: null, message: `${key} is late`, notify, at,
    });

    it("pages a pipeline's runs newest first by interval, filtered, with nothing lost or repeated while runs are added", async () => {
      const days = Array.from({ length: 9 }, (_, i) => `2026-08-${String(i + 10).padStart(2, "0")}`);
      for (const day of days) await store.createRunIfAbsent(newRun({ businessDate: day, tasks: tasksOf(["a"]), trigger: day < "2026-08-15" ? "schedule" : "manual" }));
      await store.createRunIfAbsent(newRun({ businessDate: "2026-08-12", pipelineId: "q", runId: "q@2026-08-12", tasks: tasksOf(["a"]) }));
      const seen: string[] = [];
      let before: number | undefined;
      for (let page = 0; page < 10; page++) {
        const runs = await store.pageRuns({ pipelineId: "p", beforeStart: before, limit: 4 });
        if (runs.length === 0) break;
        seen.push(...runs.map((r) => r.businessDate));
        before = runs.at(-1)!.intervalStart;
        // A newer run arriving between pages does not shift the next page.
        await store.createRunIfAbsent(newRun({ businessDate: `2026-09-${String(page + 10).padStart(2, "0")}`, tasks: tasksOf(["a"]) }));
      }
      expect(seen).toEqual([...days].reverse());
      const manual = await store.pageRuns({ pipelineId: "p", triggers: ["manual"], toStart: Date.parse("2026-09-01T00:00:00Z"), limit: 50 });
      expect(manual.map((r) => r.businessDate)).toEqual(["2026-08-18", "2026-08-17", "2026-08-16", "2026-08-15"]);
      const ranged = await store.pageRuns({ pipelineId: "p", fromStart: Date.parse("2026-08-11T00:00:00Z"), toStart: Date.parse("2026-08-13T00:00:00Z"), limit: 50 });
      expect(ranged.map((r) => r.runId)).toEqual(["p@2026-08-12", "p@2026-08-11"]);
      expect(await store.pageRuns({ pipelineId: "p", states: ["failed"], limit: 50 })).toEqual([]);
      await store.createRunIfAbsent(newRun({ businessDate: "2026-07-01", codeVersion: "c0de1", tasks: tasksOf(["a"]) }));
      await store.createRunIfAbsent(newRun({ businessDate: "2026-07-02", codeVersion: "c0de1", tasks: tasksOf(["a"]) }));
      await store.createRunIfAbsent(newRun({ businessDate: "2026-07-03", codeVersion: "c0de2", tasks: tasksOf(["a"]) }));
      const pinned = await store.pageRuns({ pipelineId: "p", codeVersion: "c0de1", limit: 1 });
      expect(pinned.map((r) => r.runId)).toEqual(["p@2026-07-02"]);
      expect((await store.pageRuns({ pipelineId: "p", codeVersion: "c0de1", beforeStart: pinned[0]!.intervalStart, limit: 5 })).map((r) => r.runId)).toEqual(["p@2026-07-01"]);
      expect((await store.pageRuns({ pipelineId: "p", states: ["queued", "failed"], limit: 2 })).map((r) => r.state)).toEqual(["queued", "queued"]);
      const cells = await store.taskInstancesOfRuns(["p@2026-08-10", "p@2026-08-11", "nope"]);
      expect(cells.map((t) => [t.runId, t.taskId])).toEqual([["p@2026-08-10", "a"], ["p@2026-08-11", "a"]]);
      expect(await store.taskInstancesOfRuns([])).toEqual([]);
    });

    it("pages the audit log, dataset events and incidents newest first; filters the audit log; lists watermarks", async () => {
      const written = [];
      for (let i = 0; i < 5; i++) {
        written.push(await store.appendAudit({ at: T0 + i, actor: i % 2 ? "ana" : "bo", action: i < 3 ? "clear" : "skip", pipelineId: i === 4 ? "q" : "p", reason: `r${i}` }));
      }
      expect(written[2]).toMatchObject({ actor: "bo", action: "clear", pipelineId: "p", reason: "r2", at: T0 + 2, runId: null, details: {} });
      const firstPage = await store.pageAudit({ limit: 2 });
      expect(firstPage.map((e) => e.reason)).toEqual(["r4", "r3"]);
      expect((await store.pageAudit({ limit: 10, beforeId: firstPage[1]!.id })).map((e) => e.reason)).toEqual(["r2", "r1", "r0"]);
      expect((await store.pageAudit({ limit: 10, actor: "ana" })).map((e) => e.reason)).toEqual(["r3", "r1"]);
      expect((await store.pageAudit({ limit: 10, action: "skip", pipelineId: "p" })).map((e) => e.reason)).toEqual(["r3"]);
      expect((await store.pageAudit({ limit: 10, fromAt: T0 + 1, toAt: T0 + 3 })).map((e) => e.reason)).toEqual(["r2", "r1"]);

      for (const [key, at] of [["k1", T0], ["k2", T0 + 1], ["k3", T0 + 1]] as const) {
        await store.openIncident({ key, kind: "late", dataset: "x", pipelineId: "p", businessDate: "2026-09-01", runId: null, message: key, notify: [], at });
      }
      await store.resolveIncident("k2", T0 + 2, "published");
      const incidents = await store.pageIncidents({ limit: 2 });
      expect(incidents.map((i) => i.key)).toEqual(["k3", "k2"]);
      expect((await store.pageIncidents({ limit: 2, before: { openedAt: incidents[1]!.openedAt, key: "k2" } })).map((i) => i.key)).toEqual(["k1"]);
      expect((await store.pageIncidents({ limit: 5, open: true })).map((i) => i.key)).toEqual(["k3", "k1"]);
      expect((await store.pageIncidents({ limit: 5, open: false })).map((i) => i.key)).toEqual(["k2"]);

      expect(await store.pageDatasetEvents({ limit: 5 })).toEqual([]);
      await store.saveWatermark("p", "a", 7, T0);
      await store.saveWatermark("q", "b", "x", T0 + 1);
      expect(await store.listWatermarks()).toEqual([{ pipelineId: "p", taskId: "a", value: 7, updatedAt: T0 }, { pipelineId: "q", taskId: "b", value: "x", updatedAt: T0 + 1 }]);
      expect((await store.listWatermarks("q")).map((w) => w.taskId)).toEqual(["b"]);
    });

    it("pages alerts newest first with their incident, state, tries and last error, filtered by pipeline, incident and state", async () => {
      await store.openIncident(incident("late:a", "p", ["hook", "log"], T0));
      await store.openIncident(incident("late:b", "q", ["hook"], T0 + 10));
      await store.resolveIncident("late:a", T0 + 20, "published");
      const due = await store.dueAlerts(T0 + 20, 10);
      const byName = (event: string, key: string, notifier: string) => due.find((a) => a.event === event && a.incidentKey === key && a.notifier === notifier)!;
      await store.recordAlertDelivery(byName("open", "late:a", "log").id, { at: T0 + 1 });
      await store.recordAlertDelivery(byName("open", "late:a", "hook").id, { at: T0 + 2, error: "webhook hook: HTTP 503", nextAttemptAt: T0 + 30_000 });

      const all = await store.pageAlerts({ limit: 10 });
      expect(all.map((a) => [a.event, a.incidentKey, a.notifier, a.state])).toEqual([
        ["resolve", "late:a", "log", "queued"],
        ["resolve", "late:a", "hook", "queued"],
        ["open", "late:b", "hook", "queued"],
        ["open", "late:a", "log", "sent"],
        ["open", "late:a", "hook", "failed"],
      ]);
      expect(all.at(-1)).toMatchObject({
        incidentKind: "late", pipelineId: "p", dataset: "orders", businessDate: "2026-09-01", message: "late:a is late",
        tries: 1, lastError: "webhook hook: HTTP 503", queuedAt: T0, nextAttemptAt: T0 + 30_000, deliveredAt: null,
      });
      expect(all[3]).toMatchObject({ tries: 1, lastError: null, deliveredAt: T0 + 1, nextAttemptAt: null });
      expect(all[0]).toMatchObject({ queuedAt: T0 + 20, tries: 0 });

      const firstTwo = await store.pageAlerts({ limit: 2 });
      const rest = await store.pageAlerts({ limit: 10, beforeId: firstTwo.at(-1)!.id });
      expect([...firstTwo, ...rest].map((a) => a.id)).toEqual(all.map((a) => a.id));
      expect((await store.pageAlerts({ limit: 10, pipelineId: "q" })).map((a) => a.incidentKey)).toEqual(["late:b"]);
      expect((await store.pageAlerts({ limit: 10, incidentKey: "late:a", state: "queued" })).map((a) => a.event)).toEqual(["resolve", "resolve"]);
      expect((await store.pageAlerts({ limit: 10, state: "failed" })).map((a) => a.notifier)).toEqual(["hook"]);
      expect((await store.pageAlerts({ limit: 10, state: "sent" })).map((a) => a.notifier)).toEqual(["log"]);
    });

    it("reads one run's audit entries newest first, optionally only some actions", async () => {
      const entry = (at: number, action: string, runId: string | null) => store.appendAudit({ at, actor: "scheduler", action, pipelineId: "p", runId, reason: `${action} ${at}` });
      await entry(T0, "restate", "p@2026-09-01");
      await entry(T0 + 1, "clear", "p@2026-09-01");
      await entry(T0 + 2, "restate", "p@2026-09-02");
      await entry(T0 + 3, "restate-refused", "p@2026-09-01");
      await entry(T0 + 4, "pause", null);
      await entry(T0 + 5, "restate", "p@2026-09-01");
      expect((await store.auditOfRun({ runId: "p@2026-09-01", limit: 10 })).map((e) => e.at - T0)).toEqual([5, 3, 1, 0]);
      expect((await store.auditOfRun({ runId: "p@2026-09-01", actions: ["restate", "restate-refused"], limit: 2 })).map((e) => e.reason)).toEqual([`restate ${T0 + 5}`, `restate-refused ${T0 + 3}`]);
      expect(await store.auditOfRun({ runId: "p@2026-09-03", limit: 10 })).toEqual([]);
    });

    it("reads only the state of each task instance of some runs, in one query", async () => {
      const edges = await saveGraph();
      await store.createRunIfAbsent(newRun({ tasks: tasksOf(["a", "b", "c", "d"], edges) }));
      await store.createRunIfAbsent(newRun({ businessDate: "2026-09-02", runId: "p@2026-09-02", tasks: tasksOf(["a"]) }));
      const [a] = await claim(1, T0, "p@2026-09-01");
      await store.finishAttempt(finish(a!));
      const cells = await store.taskStatesOfRuns(["p@2026-09-01", "p@2026-09-02", "nope"]);
      expect(cells.map((c) => `${c.runId} ${c.taskId} ${c.state} ${c.tryNumber}`).sort()).toEqual([
        "p@2026-09-01 a success 1", "p@2026-09-01 b queued 0", "p@2026-09-01 c scheduled 0", "p@2026-09-01 d queued 0", "p@2026-09-02 a queued 0",
      ]);
      expect(Object.keys(cells[0]!).sort()).toEqual(["mapped", "runId", "state", "taskId", "tryNumber"]);
      expect(cells.every((c) => c.mapped === null)).toBe(true);
      expect(await store.taskStatesOfRuns([])).toEqual([]);
    });
  });
}
