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

    describe("an incident's lifecycle", () => {
      const incident = { key: "sla_missed:orders:2026-09-01", kind: "sla_missed" as const, dataset: "orders", pipelineId: "p", businessDate: "2026-09-01", runId: null, message: "missed", notify: ["hook"], at: T0 };
      const sent = async () => (await store.dueAlerts(T0 + 1e9, 50)).map((a) => `${a.event} ${a.notifier}`);

      it("acknowledged by a person (who, why, until when), then resolved by one with a reason: audited, and the resolution queued for the notifier told of the opening", async () => {
        await store.openIncident(incident);
        const snoozed = await store.actOnIncident({ key: incident.key, kind: "acknowledge", actor: "ana", reason: "upstream late", until: T0 + 3_600_000, at: T0 + 10 });
        expect(snoozed.incident).toMatchObject({ acknowledgement: { at: T0 + 10, by: "ana", reason: "upstream late", until: T0 + 3_600_000 }, resolvedAt: null });
        expect(snoozed.audit).toMatchObject({ actor: "ana", action: "incident-snooze", pipelineId: "p", reason: "upstream late", details: { incident: incident.key, kind: "sla_missed", until: T0 + 3_600_000 } });
        const acked = await store.actOnIncident({ key: incident.key, kind: "acknowledge", actor: "bo", reason: "on it", until: null, at: T0 + 20 });
        expect(acked.incident.acknowledgement).toEqual({ at: T0 + 20, by: "bo", reason: "on it", until: null });
        expect(acked.audit.action).toBe("incident-acknowledge");
        expect(await sent()).toEqual(["open hook"]);

        const resolved = await store.actOnIncident({ key: incident.key, kind: "resolve", actor: "ana", reason: " reloaded by hand ", at: T0 + 30 });
        expect(resolved.incident).toMatchObject({ resolvedAt: T0 + 30, resolvedBy: "ana", resolution: "reloaded by hand" });
        expect(resolved.audit).toMatchObject({ actor: "ana", action: "incident-resolve", reason: "reloaded by hand" });
        expect(await sent()).toEqual(["open hook", "resolve hook"]);
        expect(await store.getIncident(incident.key)).toEqual(resolved.incident);
        expect(await store.listIncidents({ open: true })).toEqual([]);
      });

      it("refuses as core decides (resolved is final, a snooze ends later, a reason), and an unknown key, writing nothing", async () => {
        await expect(store.actOnIncident({ key: "nope", kind: "resolve", actor: "a", reason: "r", at: T0 })).rejects.toThrow("no incident nope");
        await store.openIncident(incident);
        await expect(store.actOnIncident({ key: incident.key, kind: "acknowledge", actor: "a", reason: "r", until: T0, at: T0 })).rejects.toThrow("must end after now");
        await expect(store.actOnIncident({ key: incident.key, kind: "resolve", actor: "a", reason: "  ", at: T0 })).rejects.toThrow("a reason is required");
        expect(await store.getIncident(incident.key)).toMatchObject({ acknowledgement: null, resolvedAt: null });
        expect(await store.resolveIncident(incident.key, T0 + 5, "published at 07:00")).toBe(true);
        expect(await store.getIncident(incident.key)).toMatchObject({ resolvedAt: T0 + 5, resolvedBy: "watchdog", resolution: "published at 07:00" });
        await expect(store.actOnIncident({ key: incident.key, kind: "acknowledge", actor: "a", reason: "r", until: null, at: T0 + 6 })).rejects.toThrow("was resolved by watchdog");
        const audit = await store.listAudit({});
        // the opening is a transition too, by idem, with the incident's message as its why
        expect(audit.map((e) => [e.actor, e.action, e.reason])).toEqual([
          ["watchdog", "incident-resolve", "published at 07:00"],
          ["watchdog", "incident-open", incident.message],
        ]);
      });

      it("idem resolves an acknowledged incident when its cause ends; a fact is recorded closed, alerting its opening only", async () => {
        await store.openIncident(incident);
        await store.actOnIncident({ key: incident.key, kind: "acknowledge", actor: "ana", reason: "r", until: null, at: T0 + 1 });
        expect(await store.resolveIncident(incident.key, T0 + 2, "published")).toBe(true);
        const fact = { ...incident, key: "late_publication:orders:2026-09-01", kind: "late_publication" as const, message: "published late", closed: "closed by its publication" };
        expect(await store.openIncident(fact)).toBe(true);
        expect(await store.getIncident(fact.key)).toMatchObject({ openedAt: T0, resolvedAt: T0, resolvedBy: "watchdog", resolution: "closed by its publication" });
        expect((await sent()).sort()).toEqual(["open hook", "open hook", "resolve hook"]);
        expect((await store.listIncidents({ open: true })).length).toBe(0);
      });

      it("tells a snooze's end once, to the notifiers told of the opening, and each later snooze's end once more; never an acknowledgement without an end", async () => {
        await store.openIncident({ ...incident, notify: ["hook", "log"] });
        const hour = 3_600_000;
        await store.actOnIncident({ key: incident.key, kind: "acknowledge", actor: "ana", reason: "upstream late", until: T0 + hour, at: T0 + 10 });
        expect(await store.reopenIncident(incident.key, T0 + hour - 1)).toBe(false);
        expect(await store.reopenIncident(incident.key, T0 + hour)).toBe(true);
        expect(await store.reopenIncident(incident.key, T0 + hour + 1)).toBe(false);
        expect(await store.getIncident(incident.key)).toMatchObject({ reopenedFor: T0 + 10, resolvedAt: null });
        const reopens = (await store.dueAlerts(T0 + 1e9, 50)).filter((a) => a.event === "reopen");
        expect(reopens.map((a) => [a.notifier, a.incidentKey])).toEqual([["hook", incident.key], ["log", incident.key]]);
        expect(reopens[0]!.payload).toMatchObject({ event: "reopen", message: "missed", acknowledgement: { by: "ana", until: T0 + hour } });
        expect((await store.pageAlerts({ incidentKey: incident.key, limit: 10 })).filter((a) => a.event === "reopen").map((a) => a.queuedAt)).toEqual([T0 + hour, T0 + hour]);

        await store.actOnIncident({ key: incident.key, kind: "acknowledge", actor: "bo", reason: "still on it", until: T0 + 3 * hour, at: T0 + 2 * hour });
        expect(await store.reopenIncident(incident.key, T0 + 3 * hour)).toBe(true);
        expect(await store.reopenIncident(incident.key, T0 + 4 * hour)).toBe(false);
        expect((await sent()).filter((e) => e.startsWith("reopen")).sort()).toEqual(["reopen hook", "reopen hook", "reopen log", "reopen log"]);

        await store.actOnIncident({ key: incident.key, kind: "acknowledge", actor: "bo", reason: "for good", until: null, at: T0 + 5 * hour });
        expect(await store.reopenIncident(incident.key, T0 + 1e12)).toBe(false);
        await store.resolveIncident(incident.key, T0 + 6 * hour, "published");
        expect(await store.reopenIncident(incident.key, T0 + 1e12)).toBe(false);
        expect(await store.reopenIncident("no-such-incident", T0)).toBe(false);
        expect((await sent()).filter((e) => e.startsWith("reopen")).length).toBe(4);
      });

      it("knows since when a promise exists: its pipeline's first recorded graph version that has it", async () => {
        expect(await store.promiseFirstSeen("p", "orders_daily")).toBeNull();
        const version = (version: string, createdAt: number, datasets: string[]) => store.savePipelineVersion({
          pipelineId: "p", version, definition: { promises: datasets.map((dataset) => ({ dataset, deadline: "D+1 06:00" })) }, edges: [], createdAt,
        });
        await version("v1", T0, []);
        await version("v2", T0 + 100, ["orders_daily"]);
        await version("v3", T0 + 200, ["orders_daily", "refunds"]);
        expect(await store.promiseFirstSeen("p", "orders_daily")).toBe(T0 + 100);
        expect(await store.promiseFirstSeen("p", "refunds")).toBe(T0 + 200);
        expect(await store.promiseFirstSeen("other", "orders_daily")).toBeNull();
      });
    });
  });
}
