import { describe, expect, it } from "vitest";
import { T0, type Harness } from "./harness.ts";

export function auditContract(h: Harness): void {
  describe("AuditStore", () => {
    const { store } = h;

    it("records who did what, when, why and against which graph version, newest first", async () => {
      await store.appendAudit({ at: T0, actor: "ana", action: "trigger", pipelineId: "p", runId: "p@2026-09-01", reason: "first load", graphVersion: "v1" });
      await store.appendAudit({ at: T0 + 1, actor: "bo", action: "rerun", pipelineId: "p", runId: "p@2026-09-01", details: { params: { mode: "append" } } });
      await store.appendAudit({ at: T0 + 2, actor: "cy", action: "pause", pipelineId: "q" });
      const entries = await store.listAudit({ pipelineId: "p" });
      expect(entries.map((e) => e.actor)).toEqual(["bo", "ana"]);
      expect(entries[1]).toMatchObject({ action: "trigger", reason: "first load", graphVersion: "v1", at: T0 });
      expect(entries[0]!.details).toEqual({ params: { mode: "append" } });
      expect(await store.listAudit({})).toHaveLength(3);
    });
  });
}
