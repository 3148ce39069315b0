import { describe, expect, it } from "vitest";
import { MAX_SUMMARY_BYTES } from "../../../src/store/port.ts";
import { newRun, tasksOf } from "../../support/shapes.ts";
import { T0, LOG_DIR, describeChannel, type Harness } from "./harness.ts";

export function attemptsContract(h: Harness): void {
  describe("AttemptStore", () => {
    const { store, saveGraph, claim, finish, states, createStandardRun } = h;

    it("records a lost attempt only once its lease has expired", async () => {
      await createStandardRun({ a: { maxTries: 2 } });
      const [a] = await claim();
      expect((await store.loseAttempt({ attemptId: a!.attemptId, now: T0 + 10_000, retryAt: T0 + 20_000 })).accepted).toBe(false);
      expect(await store.listExpiredAttempts(T0 + 30_001, 10)).toMatchObject([{ attemptId: a!.attemptId, workerId: "w1" }]);
      const lost = await store.loseAttempt({ attemptId: a!.attemptId, now: T0 + 30_001, retryAt: T0 + 40_000 });
      expect(lost).toMatchObject({ accepted: true, taskState: "up_for_retry" });
    });

    describe("claiming", () => {
      it("starts an attempt with a lease and marks the run running", async () => {
        await createStandardRun();
        const [attempt, ...rest] = await claim();
        expect(rest).toEqual([]);
        expect(attempt).toMatchObject({ taskId: "a", tryNumber: 1, businessDate: "2026-09-01", leaseExpiresAt: T0 + 30_000 });
        expect(attempt!.logPath).toBe("/logs/p@2026-09-01/a/try-1.log");
        expect((await store.getRun("p@2026-09-01"))!.state).toBe("running");
        expect(await states()).toMatchObject({ a: "running" });
      });

      it("never hands the same task instance to two workers", async () => {
        await createStandardRun();
        const first = await claim(10, T0, undefined, "w1");
        const second = await claim(10, T0, undefined, "w2");
        expect(first).toHaveLength(1);
        expect(second).toEqual([]);
      });

      it("claims at most the limit, higher priority first", async () => {
        await saveGraph("flat", []);
        await store.createRunIfAbsent(
          newRun({ graphVersion: "flat", tasks: tasksOf(["low", "high", "mid"], [], { high: { priority: 9 }, mid: { priority: 5 } }) }),
        );
        expect((await claim(2)).map((c) => c.taskId)).toEqual(["high", "mid"]);
      });

      it("claims only from the run it is asked about", async () => {
        await saveGraph();
        await store.createRunIfAbsent(newRun({ runId: "p@2026-09-01", tasks: tasksOf(["a"]) }));
        await store.createRunIfAbsent(newRun({ runId: "p@2026-09-02", businessDate: "2026-09-02", tasks: tasksOf(["a"]) }));
        const claimed = await claim(10, T0, "p@2026-09-02");
        expect(claimed.map((c) => c.runId)).toEqual(["p@2026-09-02"]);
      });

      it("renews a lease only for the worker that holds it", async () => {
        await createStandardRun();
        const [attempt] = await claim();
        expect(await store.renewLease(attempt!.attemptId, "w1", T0 + 60_000)).toBe(true);
        expect(await store.renewLease(attempt!.attemptId, "intruder", T0 + 60_000)).toBe(false);
        const [record] = await store.listAttempts("p@2026-09-01", "a");
        expect(record!.leaseExpiresAt).toBe(T0 + 60_000);
      });
    });

    describe("finishing an attempt", () => {
      it("makes the children eligible in the same step", async () => {
        await createStandardRun();
        const [a] = await claim();
        const outcome = await store.finishAttempt(finish(a!, { summary: JSON.stringify({ rows: 3 }) }));
        expect(outcome).toEqual({ accepted: true, taskState: "success", runState: null });
        expect(await states()).toEqual({ a: "success", b: "queued", c: "scheduled", d: "queued" });
        expect((await claim()).map((c) => c.taskId).sort()).toEqual(["b", "d"]);
        const [record] = await store.listAttempts("p@2026-09-01", "a");
        expect(record).toMatchObject({ state: "success", summary: { rows: 3 }, endedAt: T0 + 1_000, workerId: "w1", pid: 123 });
      });

      it("finishes the run when the last task succeeds", async () => {
        await createStandardRun();
        let outcome;
        for (let i = 0; i < 3; i++) for (const attempt of await claim()) outcome = await store.finishAttempt(finish(attempt));
        expect(outcome!.runState).toBe("success");
        expect(await store.getRun("p@2026-09-01")).toMatchObject({ state: "success", endedAt: T0 + 1_000 });
      });

      it("puts a failed task with tries left up for retry at the given time, keeping the try count", async () => {
        await createStandardRun({ a: { maxTries: 2 } });
        const [first] = await claim();
        const outcome = await store.finishAttempt(
          finish(first!, { outcome: "failed", errorClass: "TaskFailed", errorMessage: "boom", retryAt: T0 + 60_000 }),
        );
        expect(outcome.taskState).toBe("up_for_retry");
        expect(await store.nextRetryAt("p@2026-09-01")).toBe(T0 + 60_000);
        expect(await claim(10, T0 + 59_999)).toEqual([]);
        const [second] = await claim(10, T0 + 60_000);
        expect(second).toMatchObject({ taskId: "a", tryNumber: 2 });
      });

      it("fails a task for good when its tries are used up, and marks everything downstream", async () => {
        await createStandardRun({ a: { maxTries: 1 } });
        const [a] = await claim();
        const outcome = await store.finishAttempt(finish(a!, { outcome: "failed", errorClass: "TaskFailed", errorMessage: "boom" }));
        expect(outcome).toEqual({ accepted: true, taskState: "failed", runState: "failed" });
        expect(await states()).toEqual({ a: "failed", b: "upstream_failed", c: "upstream_failed", d: "upstream_failed" });
        const b = (await store.listTaskInstances("p@2026-09-01")).find((t) => t.taskId === "b");
        expect(b!.reason).toBe("upstream: 1 task(s) failed");
      });

      it("never retries an error that is not retryable, whatever tries are left", async () => {
        await createStandardRun({ a: { maxTries: 5 } });
        const [a] = await claim();
        const outcome = await store.finishAttempt(
          finish(a!, { outcome: "failed", retryable: false, errorClass: "DataError", errorMessage: "3 rows for 2 orders", retryAt: T0 }),
        );
        expect(outcome.taskState).toBe("failed");
        const [record] = await store.listAttempts("p@2026-09-01", "a");
        expect(record).toMatchObject({ state: "failed", errorClass: "DataError", errorMessage: "3 rows for 2 orders" });
      });

      it("propagates a skip with its reason, and the run still succeeds", async () => {
        await createStandardRun();
        const [a] = await claim();
        await store.finishAttempt(finish(a!, { outcome: "skipped", skipReason: "no file today" }));
        expect(await states()).toEqual({ a: "skipped", b: "skipped", c: "skipped", d: "skipped" });
        const tasks = await store.listTaskInstances("p@2026-09-01");
        expect(tasks.find((t) => t.taskId === "a")!.reason).toBe("no file today");
        expect((await store.getRun("p@2026-09-01"))!.state).toBe("success");
      });

      it("runs an all_done task after its parent failed", async () => {
        await createStandardRun({ b: { triggerRule: "all_done" } });
        const [a] = await claim();
        await store.finishAttempt(finish(a!, { outcome: "failed", errorClass: "TaskFailed", errorMessage: "x" }));
        expect(await states()).toEqual({ a: "failed", b: "queued", c: "scheduled", d: "upstream_failed" });
      });

      it("runs a one_success task as soon as one parent succeeds", async () => {
        const edges = await saveGraph("v2", [["x", "z"], ["y", "z"]]);
        await store.createRunIfAbsent(newRun({ graphVersion: "v2", tasks: tasksOf(["x", "y", "z"], edges, { z: { triggerRule: "one_success" } }) }));
        const claimed = await claim();
        await store.finishAttempt(finish(claimed.find((c) => c.taskId === "x")!));
        expect(await states()).toMatchObject({ x: "success", y: "running", z: "queued" });
      });

      it("refuses a result from a worker that does not hold the attempt", async () => {
        await createStandardRun();
        const [a] = await claim();
        const stale = await store.finishAttempt(finish(a!, { workerId: "someone-else" }));
        expect(stale.accepted).toBe(false);
        expect(await states()).toMatchObject({ a: "running" });
      });

      it("refuses to record the same attempt twice", async () => {
        await createStandardRun({ a: { maxTries: 3 } });
        const [a] = await claim();
        await store.finishAttempt(finish(a!, { outcome: "failed", errorClass: "TaskFailed", errorMessage: "x", retryAt: T0 }));
        const again = await store.finishAttempt(finish(a!));
        expect(again.accepted).toBe(false);
        expect(await states()).toMatchObject({ a: "up_for_retry" });
      });

      it("rejects a summary over 64 KiB: the store keeps counts, not data", async () => {
        await createStandardRun();
        const [a] = await claim();
        const huge = JSON.stringify({ rows: "x".repeat(MAX_SUMMARY_BYTES) });
        await expect(store.finishAttempt(finish(a!, { summary: huge }))).rejects.toThrow(/at most 65536/);
        expect(await states()).toMatchObject({ a: "running" });
      });
    });

    describe("claims limited to one backfill", () => {
      it("claim only the task instances of that backfill's runs, leaving other queued runs alone", async () => {
        await saveGraph();
        await store.createBackfill({
          backfillId: "bf_1", pipelineId: "p", fromDate: "2026-09-01", toDate: "2026-09-01", reprocess: "none", maxActiveRuns: 2,
          backwards: false, taskIds: null, actor: "ana", reason: "restate", graphVersion: "v1", estimate: {}, at: T0,
          items: [{ businessDate: "2026-09-01", intervalStart: 0, intervalEnd: 1, action: "create", why: "no run yet", runId: "p@2026-09-01" }],
        });
        await store.createRunIfAbsent(newRun({ backfillId: "bf_1", trigger: "backfill", tasks: tasksOf(["a"]) }));
        await store.createRunIfAbsent(newRun({ businessDate: "2026-09-02", runId: "p@2026-09-02", tasks: tasksOf(["a"]) }));
        const claimed = await store.claimReady({ workerId: "w1", pid: 1, limit: 10, now: T0, leaseMs: 30_000, backfillId: "bf_1", logDir: LOG_DIR });
        expect(claimed.map((c) => c.runId)).toEqual(["p@2026-09-01"]);
        expect(await store.claimReady({ workerId: "w1", pid: 1, limit: 10, now: T0, leaseMs: 30_000, backfillId: "bf_1", logDir: LOG_DIR })).toEqual([]);
        expect((await claim()).map((c) => c.runId)).toEqual(["p@2026-09-02"]);
      });
    });

    describe("claiming only loaded pipelines", () => {
      it("leaves task instances of pipelines the worker has not loaded for someone who has", async () => {
        await createStandardRun();
        const none = await store.claimReady({ workerId: "w1", pid: 1, limit: 10, now: T0, leaseMs: 30_000, logDir: LOG_DIR, pipelineIds: ["other"] });
        expect(none).toEqual([]);
        expect((await states()).a).toBe("queued");
        const mine = await store.claimReady({ workerId: "w1", pid: 1, limit: 10, now: T0, leaseMs: 30_000, logDir: LOG_DIR, pipelineIds: ["other", "p"] });
        expect(mine.map((c) => c.taskId)).toEqual(["a"]);
      });
    });

    describeChannel(h, "watchWork", "a run makes work eligible", () => createStandardRun());

    describe("a worker's own path: leases renewed together, starts after a wait", () => {
      it("renews many leases in one call, only the worker's own running attempts", async () => {
        await saveGraph("flat", []);
        await store.createRunIfAbsent(newRun({ graphVersion: "flat", tasks: tasksOf(["a", "b", "c"]) }));
        const mine = await claim(2, T0, undefined, "w1");
        const [theirs] = await claim(1, T0, undefined, "w2");
        await store.finishAttempt(finish(mine[1]!));
        const ids = [mine[0]!.attemptId, mine[1]!.attemptId, theirs!.attemptId, 999_999];
        expect(await store.renewLeases("w1", ids, T0 + 90_000)).toEqual([mine[0]!.attemptId]);
        expect(await store.renewLeases("w1", [], T0 + 90_000)).toEqual([]);
        const lease = async (taskId: string) => (await store.listAttempts("p@2026-09-01", taskId))[0]!.leaseExpiresAt;
        expect(await lease(mine[0]!.taskId)).toBe(T0 + 90_000);
        expect(await lease(theirs!.taskId)).toBe(T0 + 30_000);
      });

      it("records an attempt's start as its finish says, and only for the attempt's own worker", async () => {
        await saveGraph("flat", []);
        await store.createRunIfAbsent(newRun({ graphVersion: "flat", tasks: tasksOf(["a", "b", "c"]) }));
        const [late, plain, stolen] = await claim(3);
        await store.finishAttempt(finish(late!, { startedAt: T0 + 400 }));
        await store.finishAttempt(finish(plain!));
        expect((await store.finishAttempt(finish(stolen!, { workerId: "intruder", startedAt: T0 + 500 }))).accepted).toBe(false);
        const started = async (taskId: string) => (await store.listAttempts("p@2026-09-01", taskId))[0]!.startedAt;
        expect(await started(late!.taskId)).toBe(T0 + 400);
        expect(await started(plain!.taskId)).toBe(T0);
        expect(await started(stolen!.taskId)).toBe(T0);
      });

      it("records the start of a handed-back attempt too (a reschedule is finished on its own)", async () => {
        await createStandardRun();
        const [a] = await claim();
        await store.finishAttempt(finish(a!, { outcome: "rescheduled", retryAt: T0 + 1_000, startedAt: T0 + 300 }));
        expect((await store.listAttempts("p@2026-09-01", "a"))[0]!.startedAt).toBe(T0 + 300);
      });
    });
  });
}
