import { describe, expect, it } from "vitest";
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
      expect(events.map((e) => [e.dataset, e.businessDate, e.runId, e.taskId, e.trigger]).sort()).toEqual([
        ["orders", "2026-09-01", "p@2026-09-01", "a", "manual"],
        ["refunds", "2026-09-01", "p@2026-09-01", "a", "manual"],
      ]);
      expect(events[0]!.id).toBeGreaterThan(events[1]!.id);
      expect((await store.listDatasetEvents({ dataset: "orders", limit: 5 })).map((e) => e.dataset)).toEqual(["orders"]);
    });
  });
}
