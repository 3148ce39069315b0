import { describe, expect, it } from "vitest";
import { T0, type Harness } from "./harness.ts";

export function watermarksContract(h: Harness): void {
  describe("WatermarkRecordStore", () => {
    const { store, claim, finish, createStandardRun } = h;

    it("keeps watermarks per pipeline and task, with their type", async () => {
      expect(await store.getWatermark("p", "a")).toBeNull();
      await store.saveWatermark("p", "a", 42, T0);
      await store.saveWatermark("p", "b", "2026-09-01T00:00:00Z", T0);
      expect([await store.getWatermark("p", "a"), await store.getWatermark("p", "b")]).toEqual([42, "2026-09-01T00:00:00Z"]);
    });

    it("refuses while a live run has the task still to finish, and sets it once that task is done", async () => {
      await store.saveWatermark("p", "a", 10, T0);
      await createStandardRun();
      expect(await store.setWatermarkByHand({ pipelineId: "p", taskId: "a", value: 5, at: T0 + 5 })).toEqual({ set: false, liveRunId: "p@2026-09-01" });
      expect(await store.getWatermark("p", "a")).toBe(10);
      const [a] = await claim();
      await store.finishAttempt(finish(a!));
      // task a is done although its run is still live: the watermark is no longer in use
      expect(await store.setWatermarkByHand({ pipelineId: "p", taskId: "a", value: 5, at: T0 + 5 })).toEqual({ set: true, previous: 10 });
      expect(await store.getWatermark("p", "a")).toBe(5);
      expect(await store.setWatermarkByHand({ pipelineId: "p", taskId: "new", value: "x", at: T0 + 6 })).toEqual({ set: true, previous: null });
      expect(await store.setWatermarkByHand({ pipelineId: "other", taskId: "b", value: 1, at: T0 + 6 })).toEqual({ set: true, previous: null });
    });
  });
}
