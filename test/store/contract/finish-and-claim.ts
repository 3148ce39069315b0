import { describe, expect, it } from "vitest";
import type { ClaimRequest } from "../../../src/store/port.ts";
import { newRun, tasksOf } from "../../support/shapes.ts";
import { T0, LOG_DIR, until, type Harness } from "./harness.ts";

/**
 * `finishAndClaim`: a worker's finishes and its next claim in one transaction. Each case is one
 * a finish and a claim made apart would also pass; what it proves is that, together, the claim
 * sees what the finishes did (and only that), and a finish refused stops nothing.
 */
export function finishAndClaimContract(h: Harness): void {
  describe("AttemptStore", () => {
    describe("a finish and the next claim in one transaction", () => {
      const { store, saveGraph, claim, finish, states, createStandardRun } = h;
      const request = (limit = 10, now = T0 + 1_000, overrides: Partial<ClaimRequest> = {}): ClaimRequest =>
        ({ workerId: "w1", pid: 123, limit, now, leaseMs: 30_000, logDir: LOG_DIR, ...overrides });

      it("claims a finish's downstream tasks in the same call, and ends the run with the last finish", async () => {
        await createStandardRun();
        const [a] = await claim();
        const first = await store.finishAndClaim({ finishes: [finish(a!)], claim: request() });
        expect(first.outcomes).toEqual([{ accepted: true, taskState: "success", runState: null }]);
        expect(first.claimed.map((c) => c.taskId).sort()).toEqual(["b", "d"]);
        expect(first.claimed[0]).toMatchObject({ runId: "p@2026-09-01", tryNumber: 1, leaseExpiresAt: T0 + 31_000 });
        expect(await states()).toEqual({ a: "success", b: "running", c: "scheduled", d: "running" });
        const second = await store.finishAndClaim({ finishes: first.claimed.map((c) => finish(c)), claim: request() });
        expect(second.claimed.map((c) => c.taskId)).toEqual(["c"]);
        const last = await store.finishAndClaim({ finishes: [finish(second.claimed[0]!)], claim: request() });
        expect(last).toEqual({ outcomes: [{ accepted: true, taskState: "success", runState: "success" }], claimed: [] });
        expect((await store.getRun("p@2026-09-01"))!.state).toBe("success");
      });

      it("reports a stale finish in the group as refused, and still records the others and claims", async () => {
        await saveGraph("flat", []);
        await store.createRunIfAbsent(newRun({ graphVersion: "flat", tasks: tasksOf(["w", "x", "y", "z"]) }));
        const [w, x, y] = await claim(3);
        await store.finishAttempt(finish(w!));
        const together = await store.finishAndClaim({
          finishes: [finish(w!), finish(x!, { workerId: "intruder" }), finish(y!)],
          claim: request(),
        });
        expect(together.outcomes).toEqual([
          { accepted: false, taskState: "success", runState: null },
          { accepted: false, taskState: "running", runState: null },
          { accepted: true, taskState: "success", runState: null },
        ]);
        expect(together.claimed.map((c) => c.taskId)).toEqual(["z"]);
        expect(await states()).toEqual({ w: "success", x: "running", y: "success", z: "running" });
      });

      it("counts the pool slots the finishes freed, and never more: a pool stays within its slots", async () => {
        await saveGraph("flat", []);
        await store.setPool({ name: "db", slots: 1, at: T0 });
        const inPool = { pool: "db" };
        await store.createRunIfAbsent(newRun({ graphVersion: "flat", tasks: tasksOf(["x", "y", "z"], [], { x: inPool, y: inPool, z: inPool }) }));
        const [x] = await claim();
        // A refused finish frees nothing: the slot is still x's.
        expect((await store.finishAndClaim({ finishes: [finish(x!, { workerId: "intruder" })], claim: request() })).claimed).toEqual([]);
        const freed = await store.finishAndClaim({ finishes: [finish(x!)], claim: request() });
        expect(freed.claimed).toHaveLength(1);
        expect((await store.listPools())[0]).toMatchObject({ name: "db", slots: 1, used: 1 });
      });

      it("takes live work before a backfill's, the task a finish made eligible included", async () => {
        await saveGraph("chain", [["a", "b"]]);
        await saveGraph("flat", []);
        await store.createBackfill({
          backfillId: "bf_1", pipelineId: "p", fromDate: "2026-08-01", toDate: "2026-08-01", reprocess: "none", maxActiveRuns: 2,
          backwards: false, taskIds: null, actor: "ana", reason: "restate", graphVersion: "flat", estimate: {}, at: T0,
          items: [{ businessDate: "2026-08-01", intervalStart: 0, intervalEnd: 1, action: "create", why: "no run yet", runId: "p@2026-08-01" }],
        });
        await store.createRunIfAbsent(newRun({
          runId: "p@2026-08-01", businessDate: "2026-08-01", backfillId: "bf_1", trigger: "backfill",
          graphVersion: "flat", tasks: tasksOf(["a"]),
        }));
        await store.createRunIfAbsent(newRun({ graphVersion: "chain", tasks: tasksOf(["a", "b"], [["a", "b"]]) }));
        const [live] = await claim(1);
        expect(live).toMatchObject({ runId: "p@2026-09-01", taskId: "a" });
        const next = await store.finishAndClaim({ finishes: [finish(live!)], claim: request(1) });
        expect(next.claimed.map((c) => `${c.runId} ${c.taskId}`)).toEqual(["p@2026-09-01 b"]);
        const after = await store.finishAndClaim({ finishes: [finish(next.claimed[0]!)], claim: request(1) });
        expect(after.outcomes[0]!.runState).toBe("success");
        expect(after.claimed.map((c) => `${c.runId} ${c.taskId}`)).toEqual(["p@2026-08-01 a"]);
      });

      it("records a handed-back attempt in the group and can claim it again on the same try", async () => {
        await createStandardRun();
        const [a] = await claim();
        const back = await store.finishAndClaim({
          finishes: [finish(a!, { outcome: "rescheduled", retryAt: T0 + 1_000, errorClass: "Cancelled", errorMessage: "handed back" })],
          claim: request(10, T0 + 1_000, { workerId: "w2" }),
        });
        expect(back.outcomes).toEqual([{ accepted: true, taskState: "up_for_reschedule", runState: null }]);
        expect(back.claimed).toMatchObject([{ taskId: "a", tryNumber: 1 }]);
      });

      it("records the finishes alone when there is no claim", async () => {
        await createStandardRun();
        const [a] = await claim();
        expect(await store.finishAndClaim({ finishes: [finish(a!)], claim: null })).toEqual({
          outcomes: [{ accepted: true, taskState: "success", runState: null }],
          claimed: [],
        });
        expect(await states()).toMatchObject({ a: "success", b: "queued", d: "queued" });
      });

      it.runIf(h.channels)("wakes the other workers only when the claim may have left work for them", async () => {
        let heard = 0;
        const stop = await store.watchWork!(() => heard++);
        try {
          // Notifications arrive in commit order: a run created after the call is heard after
          // anything the call sent, so once it is heard, the count says whether the call notified.
          let day = 10;
          const heardAfter = async (call: () => Promise<unknown>) => {
            const before = heard;
            await call();
            await store.createRunIfAbsent(newRun({ runId: `p@2026-09-${day}`, businessDate: `2026-09-${day}`, tasks: tasksOf(["a"]) }));
            day++;
            await until(() => heard > before, "the wake-up of the run created after the call");
            await new Promise((r) => setTimeout(r, 50));
            return heard - before - 1;
          };
          await createStandardRun();
          const [a] = await claim(1, T0, undefined, "w1");
          // a's finish makes b and d eligible; a claim of ten takes both: nothing is left to tell.
          let claimed: Awaited<ReturnType<typeof store.finishAndClaim>>["claimed"] = [];
          expect(await heardAfter(async () => ({ claimed } = await store.finishAndClaim({ finishes: [finish(a!)], claim: request(10, T0 + 1_000, { pipelineIds: ["p"] }) })))).toBe(0);
          expect(claimed).toHaveLength(2);
          // b's finish makes c eligible, and a claim that asks for nothing (no free slot) leaves it to the others.
          const b = claimed.find((c) => c.taskId === "b")!;
          expect(await heardAfter(() => store.finishAndClaim({ finishes: [finish(b)], claim: request(0) }))).toBeGreaterThan(0);
        } finally {
          await stop();
        }
      });

      it.runIf(h.channels)("does not wake the worker that made the call with what it announces for the others", async () => {
        const heard = { w1: 0, w2: 0 };
        const stops = [await store.watchWork!(() => heard.w1++, "w1"), await store.watchWork!(() => heard.w2++, "w2")];
        try {
          await createStandardRun();
          await until(() => heard.w1 === 1 && heard.w2 === 1, "both workers hearing of the run");
          const [a] = await claim(1, T0, undefined, "w1");
          // No free slot (a claim of none): b and d are left to the others.
          await store.finishAndClaim({ finishes: [finish(a!)], claim: request(0) });
          await store.createRunIfAbsent(newRun({ runId: "p@2026-09-10", businessDate: "2026-09-10", tasks: tasksOf(["a"]) }));
          await until(() => heard.w1 === 2 && heard.w2 >= 2, "both workers hearing of the second run");
          await new Promise((r) => setTimeout(r, 50));
          expect(heard).toEqual({ w1: 2, w2: 3 });
        } finally {
          for (const stop of stops) await stop();
        }
      });
    });
  });
}
