import { describe, expect, it } from "vitest";
import { newRun, tasksOf } from "../../support/shapes.ts";
import { T0, describeChannel, type Harness } from "./harness.ts";

export function schedulingContract(h: Harness): void {
  describe("SchedulingStore", () => {
    const { store, saveGraph, endedRun, restate } = h;

    it("creates a pipeline's state unpaused, and pauses it with who and why", async () => {
      expect(await store.pipelineState("p", T0)).toMatchObject({ paused: false, scheduleCursor: null, createdAt: T0 });
      const paused = await store.setPaused({ pipelineId: "p", paused: true, note: "vendor outage", actor: "ana", at: T0 + 1 });
      expect(paused).toMatchObject({ paused: true, pausedNote: "vendor outage", pausedBy: "ana", pausedAt: T0 + 1 });
    });

    it("moves the schedule cursor forward only, with the run it creates", async () => {
      await saveGraph();
      const day = (d: string, cursor: number) => newRun({ runId: `p@${d}`, businessDate: d, tasks: tasksOf(["a"]), cursor });
      await store.createRunIfAbsent(day("2026-09-02", 200));
      await store.createRunIfAbsent(day("2026-09-01", 100));
      expect((await store.pipelineState("p", T0)).scheduleCursor).toBe(200);
      expect(await store.countLiveRuns("p")).toBe(2);
    });

    it("keeps skipped intervals for the ledger", async () => {
      await store.skipIntervals({ pipelineId: "p", intervals: [{ start: 10, end: 20, businessDate: "2026-09-01" }], reason: "catch-up latest", at: T0, cursor: 20 });
      const { skipped } = await store.ledger("p", 0, 100);
      expect(skipped).toEqual([{ pipelineId: "p", intervalStart: 10, intervalEnd: 20, businessDate: "2026-09-01", reason: "catch-up latest", at: T0 }]);
    });

    it("notes why a run was not restated once per head interval, and forgets it when restated", async () => {
      await endedRun("2026-09-01", T0);
      const note = (headStart: number, text: string) => store.noteRestateRefusal({ runId: "p@2026-09-01", headStart, note: text });
      expect(await note(100, "frozen: month closed")).toBe(true);
      expect(await note(100, "frozen: month closed")).toBe(false);
      expect((await store.getRun("p@2026-09-01"))!.restateNote).toBe("frozen: month closed");
      expect(await note(200, "frozen again")).toBe(true);
      await restate("2026-09-01", T0 + 10, T0 + 5);
      expect((await store.getRun("p@2026-09-01"))!.restateNote).toBeNull();
      expect(await store.noteRestateRefusal({ runId: "p@nope", headStart: 1, note: "x" })).toBe(false);
    });

    describe("frozen periods as recorded", () => {
      const audit = (reason: string) => ({ at: T0, actor: "scheduler", action: "frozen-periods", pipelineId: "p", graphVersion: "v2", reason, details: { added: [] } });
      const record = (expected: string | null, periods: string, reason: string) =>
        store.recordFrozenPeriods({ scope: "p", expected, periods, graphVersion: "v2", at: T0, audit: audit(reason) });

      it("switch the recorded periods and write the audit entry together, only from what the caller read", async () => {
        expect(await store.recordedFrozenPeriods("p")).toBeNull();
        const first = await record(null, '[{"from":"2026-09-01"}]', "added September");
        expect(first).toMatchObject({ action: "frozen-periods", pipelineId: "p", graphVersion: "v2", reason: "added September", details: { added: [] } });
        expect(await store.recordedFrozenPeriods("p")).toEqual({ scope: "p", periods: '[{"from":"2026-09-01"}]', graphVersion: "v2", recordedAt: T0 });
        // Another process read "nothing recorded" too: its switch is refused and writes no entry.
        expect(await record(null, '[{"from":"2026-09-01"}]', "added September again")).toBeNull();
        expect(await record("[]", "[]", "stale")).toBeNull();
        expect(await record('[{"from":"2026-09-01"}]', "[]", "removed September")).toMatchObject({ reason: "removed September" });
        expect((await store.recordedFrozenPeriods("p"))!.periods).toBe("[]");
        expect((await store.listAudit({ limit: 10 })).map((e) => e.reason)).toEqual(["removed September", "added September"]);
        expect(await store.recordedFrozenPeriods("*")).toBeNull();
      });

      it("let exactly one of several processes that saw the same change record it", async () => {
        const outcomes = await Promise.all([1, 2, 3, 4].map((n) => record(null, "[1]", `seen by ${n}`)));
        expect(outcomes.filter((o) => o !== null)).toHaveLength(1);
        expect(await store.listAudit({ limit: 10 })).toHaveLength(1);
      });
    });

    describeChannel(h, "watchScheduling", "a pipeline is paused", () => store.setPaused({ pipelineId: "p", paused: true, note: null, actor: "ana", at: T0 }));
  });
}
