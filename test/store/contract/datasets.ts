import { describe, expect, it } from "vitest";
import type { NewExternalDatasetEvent } from "../../../src/store/port.ts";
import { newRun, tasksOf } from "../../support/shapes.ts";
import { T0, type Harness } from "./harness.ts";

export function datasetsContract(h: Harness): void {
  describe("DatasetStore", () => {
    const { store, claim, finish } = h;

    it("turns a success's datasets into events, waits per business date until consumed, and lists them newest first", async () => {
      await store.createRunIfAbsent(newRun({ tasks: tasksOf(["a"]) }));
      const [a] = await claim();
      await store.finishAttempt(finish(a!, { datasets: ["orders", "refunds"] }));
      expect(await store.collectDatasetEvents("consumer", ["orders"])).toEqual(new Map([["2026-09-01", new Set(["orders"])]]));
      // Read once: the cursor moved, the wait stays until a run consumes it.
      expect(await store.collectDatasetEvents("consumer", ["orders", "refunds"])).toEqual(new Map([["2026-09-01", new Set(["orders"])]]));
      await store.consumeDatasetWaits("consumer", "2026-09-01");
      expect(await store.collectDatasetEvents("consumer", ["orders"])).toEqual(new Map());
      const events = await store.listDatasetEvents({});
      expect(events.map((e) => e.source === "run" && [e.dataset, e.businessDate, e.runId, e.taskId, e.trigger]).sort()).toEqual([
        ["orders", "2026-09-01", "p@2026-09-01", "a", "manual"],
        ["refunds", "2026-09-01", "p@2026-09-01", "a", "manual"],
      ]);
      expect(events[0]!.id).toBeGreaterThan(events[1]!.id);
      expect((await store.listDatasetEvents({ dataset: "orders", limit: 5 })).map((e) => e.dataset)).toEqual(["orders"]);
    });

    const external = (overrides: Partial<NewExternalDatasetEvent> = {}): NewExternalDatasetEvent => ({
      dataset: "vendor_prices", businessDate: "2026-09-01", idempotencyKey: "vendor-2026-09-01", source: "api", actor: "airflow",
      summary: '{"rows":120}', at: T0,
      audit: { at: T0, actor: "airflow", action: "dataset-event", pipelineId: null, details: { dataset: "vendor_prices", source: "api" } },
      ...overrides,
    });

    it("records an outside producer's event once per (dataset, idempotency key), with its audit entry, and feeds it to data triggers", async () => {
      const first = await store.recordExternalDatasetEvent(external());
      expect(first.created).toBe(true);
      expect(first.event).toMatchObject({ dataset: "vendor_prices", businessDate: "2026-09-01", source: "api", actor: "airflow", idempotencyKey: "vendor-2026-09-01", summary: '{"rows":120}', at: T0 });
      expect(first.audit).toMatchObject({ action: "dataset-event", actor: "airflow", pipelineId: null, details: { dataset: "vendor_prices", source: "api" } });

      // The same key again, whatever else it says: nothing written, the first event answered.
      const again = await store.recordExternalDatasetEvent(external({ businessDate: "2026-09-02", source: "cli", actor: "bo", summary: null, at: T0 + 5 }));
      expect(again).toEqual({ event: first.event, created: false, audit: null });
      expect(await store.listAudit({})).toHaveLength(1);

      // Another dataset may use the same key; a new key is a new event.
      expect((await store.recordExternalDatasetEvent(external({ dataset: "vendor_fx" }))).created).toBe(true);
      const later = await store.recordExternalDatasetEvent(external({ idempotencyKey: "vendor-2026-09-03", businessDate: "2026-09-03", source: "webhook", actor: "webhook", summary: null }));
      expect(later.created).toBe(true);
      expect(later.event.id).toBeGreaterThan(first.event.id);

      expect(await store.collectDatasetEvents("consumer", ["vendor_prices"])).toEqual(new Map([
        ["2026-09-01", new Set(["vendor_prices"])],
        ["2026-09-03", new Set(["vendor_prices"])],
      ]));
      expect((await store.listDatasetEvents({ dataset: "vendor_prices" })).map((e) => [e.source, e.businessDate])).toEqual([["webhook", "2026-09-03"], ["api", "2026-09-01"]]);
      expect((await store.pageDatasetEvents({ dataset: "vendor_prices", limit: 1 }))[0]).toEqual(later.event);
    });

    it("creates one event when senders of one key race, and answers every one of them with it", async () => {
      const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => store.recordExternalDatasetEvent(external({ actor: `sender-${i}`, at: T0 + i }))));
      expect(answers.filter((a) => a.created)).toHaveLength(1);
      const winner = answers.find((a) => a.created)!.event;
      for (const a of answers) expect(a.event).toEqual(winner);
      expect(await store.listDatasetEvents({ dataset: "vendor_prices" })).toHaveLength(1);
      expect(await store.listAudit({})).toHaveLength(1);
    });

    it("refuses an outside event's summary beyond the store's size cap, writing nothing", async () => {
      await expect(store.recordExternalDatasetEvent(external({ summary: JSON.stringify("x".repeat(70_000)) }))).rejects.toThrow(/summary is \d+ bytes/);
      expect(await store.listDatasetEvents({})).toEqual([]);
    });
  });
}
