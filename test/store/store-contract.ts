import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { MAX_SUMMARY_BYTES, type AttemptFinish, type ClaimedAttempt, type Store } from "../../src/store/port.ts";
import { newRun, tasksOf } from "../support/shapes.ts";

const T0 = Date.parse("2026-09-02T02:00:00Z");
const LOG = (run: string, task: string, n: number) => `/logs/${run}/${task}/try-${n}.log`;

/**
 * The behaviour every state store adapter must have. Each adapter's test file calls this with
 * a factory for a fresh, empty store; nothing here knows which database is behind it.
 */
export function describeStoreContract(adapter: string, openStore: () => Promise<Store>, closeStore?: (s: Store) => Promise<void>) {
  describe(`${adapter} store contract`, () => {
    let store: Store;
    beforeEach(async () => {
      store = await openStore();
      await store.migrate();
    });
    afterEach(async () => {
      await (closeStore ? closeStore(store) : store.close());
    });

    /** a -> b -> c, and a -> d: the graph most tests use. */
    async function saveGraph(version = "v1", edges: [string, string][] = [["a", "b"], ["b", "c"], ["a", "d"]]) {
      await store.savePipelineVersion({
        pipelineId: "p",
        version,
        definition: { edges },
        edges: edges.map(([parent, child]) => ({ parent, child })),
        createdAt: T0,
      });
      return edges;
    }

    async function claim(limit = 10, now = T0, runId?: string, workerId = "w1"): Promise<ClaimedAttempt[]> {
      return store.claimReady({ workerId, pid: 123, limit, now, leaseMs: 30_000, runId, logPath: LOG });
    }

    function finish(attempt: ClaimedAttempt, overrides: Partial<AttemptFinish> = {}): AttemptFinish {
      return {
        attemptId: attempt.attemptId,
        workerId: "w1",
        now: T0 + 1_000,
        outcome: "success",
        retryable: true,
        retryAt: null,
        exitCode: null,
        errorClass: null,
        errorMessage: null,
        summary: null,
        skipReason: null,
        ...overrides,
      };
    }

    async function states(runId = "p@2026-09-01") {
      return Object.fromEntries((await store.listTaskInstances(runId)).map((t) => [t.taskId, t.state]));
    }

    async function createStandardRun(overrides: Parameters<typeof tasksOf>[2] = {}) {
      const edges = await saveGraph();
      return store.createRunIfAbsent(newRun({ tasks: tasksOf(["a", "b", "c", "d"], edges, overrides) }));
    }

    describe("runs", () => {
      it("creates one run per pipeline and interval, however often it is asked", async () => {
        const first = await createStandardRun();
        const second = await createStandardRun();
        const twinWithOtherId = await store.createRunIfAbsent(
          newRun({ runId: "p@other-name", tasks: tasksOf(["a"]) }),
        );
        expect(first.created).toBe(true);
        expect(second.created).toBe(false);
        expect(twinWithOtherId.created).toBe(false);
        expect(twinWithOtherId.run.runId).toBe("p@2026-09-01");
        expect(await store.listRuns({ pipelineId: "p" })).toHaveLength(1);
      });

      it("records the interval, trigger, who and why, and the graph version", async () => {
        const { run } = await createStandardRun();
        expect(run).toMatchObject({
          pipelineId: "p",
          businessDate: "2026-09-01",
          state: "queued",
          trigger: "manual",
          triggeredBy: "tester",
          graphVersion: "v1",
          intervalStart: Date.parse("2026-09-01T00:00:00Z"),
          intervalEnd: Date.parse("2026-09-02T00:00:00Z"),
        });
      });

      it("makes only tasks without upstream eligible at first", async () => {
        await createStandardRun();
        expect(await states()).toEqual({ a: "queued", b: "scheduled", c: "scheduled", d: "scheduled" });
      });

      it("lists runs newest interval first, per pipeline", async () => {
        await saveGraph();
        for (const day of ["2026-09-01", "2026-09-03", "2026-09-02"]) {
          await store.createRunIfAbsent(newRun({ runId: `p@${day}`, businessDate: day, tasks: tasksOf(["a"]) }));
        }
        const runs = await store.listRuns({ pipelineId: "p", limit: 2 });
        expect(runs.map((r) => r.businessDate)).toEqual(["2026-09-03", "2026-09-02"]);
        expect(await store.listRuns({ pipelineId: "other" })).toEqual([]);
      });
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
          finish(first!, { outcome: "failed", errorClass: "Error", errorMessage: "boom", retryAt: T0 + 60_000 }),
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
        const outcome = await store.finishAttempt(finish(a!, { outcome: "failed", errorClass: "Error", errorMessage: "boom" }));
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
        await store.finishAttempt(finish(a!, { outcome: "failed", errorClass: "Error", errorMessage: "x" }));
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
        await store.finishAttempt(finish(a!, { outcome: "failed", errorClass: "Error", errorMessage: "x", retryAt: T0 }));
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

    describe("running a run again", () => {
      async function runToEnd() {
        for (let i = 0; i < 3; i++) for (const attempt of await claim()) await store.finishAttempt(finish(attempt));
      }

      it("resets every task instance and continues the try numbers", async () => {
        await createStandardRun();
        await runToEnd();
        const rerun = await store.rerun({ runId: "p@2026-09-01", graphVersion: "v1", tasks: tasksOf(["a", "b", "c", "d"], [["a", "b"], ["b", "c"], ["a", "d"]]), params: { mode: "append" }, at: T0 + 5_000 });
        expect(rerun).toMatchObject({ state: "queued", endedAt: null, params: { mode: "append" } });
        expect(await states()).toEqual({ a: "queued", b: "scheduled", c: "scheduled", d: "scheduled" });
        const [a] = await claim();
        expect(a).toMatchObject({ taskId: "a", tryNumber: 2, params: { mode: "append" } });
        expect(await store.listAttempts("p@2026-09-01", "a")).toHaveLength(2);
      });

      it("gives the rerun its full retries again", async () => {
        await createStandardRun({ a: { maxTries: 2 } });
        await runToEnd();
        await store.rerun({ runId: "p@2026-09-01", graphVersion: "v1", tasks: tasksOf(["a", "b", "c", "d"], [["a", "b"], ["b", "c"], ["a", "d"]], { a: { maxTries: 2 } }), params: {}, at: T0 });
        const a = (await store.listTaskInstances("p@2026-09-01")).find((t) => t.taskId === "a")!;
        expect(a).toMatchObject({ tryNumber: 1, maxTries: 3 });
      });

      it("can reset chosen tasks only, leaving the rest as they ended", async () => {
        await createStandardRun();
        await runToEnd();
        await store.rerun({ runId: "p@2026-09-01", graphVersion: "v1", tasks: tasksOf(["a", "b", "c", "d"], [["a", "b"], ["b", "c"], ["a", "d"]]), taskIds: ["b", "c"], params: {}, at: T0 });
        expect(await states()).toEqual({ a: "success", b: "queued", c: "scheduled", d: "success" });
      });

      it("is refused while a task of the run is running", async () => {
        await createStandardRun();
        await claim();
        await expect(
          store.rerun({ runId: "p@2026-09-01", graphVersion: "v1", tasks: tasksOf(["a"]), params: {}, at: T0 }),
        ).rejects.toThrow(/running/);
      });

      it("follows a new graph version: new tasks appear, removed tasks go", async () => {
        await createStandardRun();
        await runToEnd();
        const edges = await saveGraph("v2", [["a", "e"]]);
        await store.rerun({ runId: "p@2026-09-01", graphVersion: "v2", tasks: tasksOf(["a", "e"], edges), params: {}, at: T0 });
        expect(await states()).toEqual({ a: "queued", e: "scheduled" });
        expect((await store.getRun("p@2026-09-01"))!.graphVersion).toBe("v2");
      });
    });

    describe("scheduling state", () => {
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

      it("never lets a pool's running slots exceed its size", async () => {
        await saveGraph("flat", []);
        await store.setPool({ name: "db", slots: 1, at: T0 });
        await store.createRunIfAbsent(newRun({ graphVersion: "flat", tasks: tasksOf(["x", "y"], [], { x: { pool: "db" }, y: { pool: "db" } }) }));
        expect(await claim()).toHaveLength(1);
        expect(await claim()).toHaveLength(0);
        const [pool] = await store.listPools();
        expect(pool).toMatchObject({ name: "db", slots: 1, used: 1, holders: [{ runId: "p@2026-09-01", slots: 1, workerId: "w1" }] });
      });

      it("lets one holder lead at a time, and a new one take over an expired lease with a higher term", async () => {
        const first = await store.tryLead({ role: "scheduler", holder: "s1", now: T0, ttlMs: 1_000 });
        const second = await store.tryLead({ role: "scheduler", holder: "s2", now: T0 + 500, ttlMs: 1_000 });
        const takeover = await store.tryLead({ role: "scheduler", holder: "s2", now: T0 + 1_001, ttlMs: 1_000 });
        expect([first.leader, second.leader, takeover.leader]).toEqual([true, false, true]);
        expect([first.term, takeover.term]).toEqual([1, 2]);
      });

      it("records a lost attempt only once its lease has expired", async () => {
        await createStandardRun({ a: { maxTries: 2 } });
        const [a] = await claim();
        expect((await store.loseAttempt({ attemptId: a!.attemptId, now: T0 + 10_000, retryAt: T0 + 20_000 })).accepted).toBe(false);
        expect(await store.listExpiredAttempts(T0 + 30_001, 10)).toMatchObject([{ attemptId: a!.attemptId, workerId: "w1" }]);
        const lost = await store.loseAttempt({ attemptId: a!.attemptId, now: T0 + 30_001, retryAt: T0 + 40_000 });
        expect(lost).toMatchObject({ accepted: true, taskState: "up_for_retry" });
      });
    });

    describe("manual actions, backfills, freshness, watermarks", () => {
      it("skips and marks task instances by hand, and downstream follows", async () => {
        await createStandardRun();
        await store.skipTask({ runId: "p@2026-09-01", taskId: "a", reason: "skipped by ana: no file", at: T0 });
        expect(await states()).toEqual({ a: "skipped", b: "skipped", c: "skipped", d: "skipped" });
        await store.markTask({ runId: "p@2026-09-01", taskId: "a", state: "success", reason: "loaded by hand", at: T0 });
        expect(await states()).toEqual({ a: "success", b: "queued", c: "scheduled", d: "queued" });
      });

      it("stores a backfill with its plan once, and tracks its runs", async () => {
        const item = (d: string, action: "create" | "refuse") => ({ businessDate: d, intervalStart: Date.parse(`${d}T00:00:00Z`), intervalEnd: Date.parse(`${d}T00:00:00Z`) + 86_400_000, action, why: action, runId: `p@${d}` });
        const request = {
          backfillId: "bf_1", pipelineId: "p", fromDate: "2026-09-01", toDate: "2026-09-02", reprocess: "none" as const, maxActiveRuns: 2,
          backwards: false, taskIds: null, actor: "ana", reason: "rebuild", graphVersion: "v1", estimate: {},
          items: [item("2026-09-01", "create"), item("2026-09-02", "refuse")], at: T0,
        };
        expect((await store.createBackfill(request)).created).toBe(true);
        expect((await store.createBackfill({ ...request, backfillId: "bf_2" })).backfill.backfillId).toBe("bf_1");
        expect((await store.pendingBackfillItems("bf_1", 10)).map((i) => i.businessDate)).toEqual(["2026-09-01"]);
        await saveGraph();
        await store.createRunIfAbsent(newRun({ backfillId: "bf_1", trigger: "backfill", tasks: tasksOf(["a"]) }));
        await store.markBackfillItemStarted("bf_1", 0);
        expect(await store.countLiveBackfillRuns("bf_1")).toBe(1);
        expect(await store.backfillProgress("bf_1")).toEqual({ planned: 1, notStarted: 0, queued: 1, running: 0, succeeded: 0, failed: 0, untouched: 1 });
        const cancelled = await store.cancelBackfill("bf_1", "wrong range", T0 + 1);
        expect(cancelled.state).toBe("cancelled");
        expect((await store.getRun("p@2026-09-01"))!.state).toBe("failed");
      });

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

      it("keeps watermarks per pipeline and task, with their type", async () => {
        expect(await store.getWatermark("p", "a")).toBeNull();
        await store.saveWatermark("p", "a", 42, T0);
        await store.saveWatermark("p", "b", "2026-09-01T00:00:00Z", T0);
        expect([await store.getWatermark("p", "a"), await store.getWatermark("p", "b")]).toEqual([42, "2026-09-01T00:00:00Z"]);
      });
    });

    describe("pipeline versions and audit", () => {
      it("keeps each graph version once", async () => {
        await saveGraph();
        await saveGraph();
        const version = await store.getPipelineVersion("p", "v1");
        expect(version).toMatchObject({ pipelineId: "p", version: "v1", createdAt: T0 });
        expect(await store.getPipelineVersion("p", "nope")).toBeNull();
      });

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

    describe("API tokens, the change feed and pages of history", () => {
      const token = (name: string, hash: string, role: "viewer" | "operator" = "viewer") => ({ tokenHash: hash, name, role, createdBy: "root", at: T0 });

      it("keeps tokens by hash, one live token per name, revoked ones out of reach", async () => {
        expect(await store.hasTokens()).toBe(false);
        const alice = await store.createToken(token("alice", "h1", "operator"));
        expect(alice).toMatchObject({ name: "alice", role: "operator", createdAt: T0, createdBy: "root", revokedAt: null });
        await expect(store.createToken(token("alice", "h2"))).rejects.toThrow(/alice/);
        expect(await store.hasTokens()).toBe(true);
        expect((await store.findToken("h1"))?.name).toBe("alice");
        expect(await store.findToken("nope")).toBeNull();
        expect(await store.revokeToken({ name: "alice", by: "root", at: T0 + 5 })).toMatchObject({ revokedAt: T0 + 5, revokedBy: "root" });
        expect(await store.revokeToken({ name: "alice", by: "root", at: T0 + 6 })).toBeNull();
        expect(await store.findToken("h1")).toBeNull();
        expect(await store.hasTokens()).toBe(false);
        await store.createToken(token("alice", "h3"));
        await store.createToken(token("bob", "h4"));
        expect((await store.listTokens({})).map((t) => [t.name, t.tokenHash])).toEqual([["alice", "h3"], ["bob", "h4"]]);
        expect((await store.listTokens({ includeRevoked: true })).map((t) => t.tokenHash)).toEqual(["h3", "h4", "h1"]);
      });

      it("records every change of a run, a task instance and an incident in order, with the run's pipeline and date", async () => {
        expect(await store.changeBounds()).toEqual({ newest: 0, oldest: null });
        await createStandardRun();
        const [a] = await claim();
        await store.finishAttempt(finish(a!));
        await store.openIncident({ key: "late:x", kind: "late", dataset: "x", pipelineId: "p", businessDate: "2026-09-01", runId: null, message: "late", notify: [], at: T0 });
        await store.resolveIncident("late:x", T0 + 1, "published");
        const changes = await store.readChanges(0, 100);
        const seen = changes.map((c) => [c.kind, c.taskId ?? c.incidentKey, c.state]);
        expect(seen).toEqual([
          ["run", null, "queued"],
          ["task", "a", "running"],
          ["run", null, "running"],
          ["task", "a", "success"],
          ["task", "b", "queued"],
          ["task", "d", "queued"],
          ["incident", "late:x", "open"],
          ["incident", "late:x", "resolved"],
        ].map(([kind, id, state]) => [kind, kind === "run" ? null : id, state]));
        const ids = changes.map((c) => c.id);
        expect(ids).toEqual([...ids].sort((x, y) => x - y));
        expect(changes[1]).toMatchObject({ runId: "p@2026-09-01", pipelineId: "p", businessDate: "2026-09-01", tryNumber: 1 });
        expect(changes[6]).toMatchObject({ incidentKind: "late", dataset: "x", pipelineId: "p", businessDate: "2026-09-01" });
        expect(await store.readChanges(ids[5]!, 100)).toHaveLength(2);
        expect(await store.readChanges(ids[0]!, 2)).toHaveLength(2);
        expect(await store.changeBounds()).toEqual({ newest: ids.at(-1), oldest: ids[0] });
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
    });

    describe("restatements", () => {
      const flat = () => tasksOf(["a", "b"]);
      async function endedRun(day: string, at: number) {
        await saveGraph("flat", []);
        await store.createRunIfAbsent(newRun({ runId: `p@${day}`, businessDate: day, graphVersion: "flat", trigger: "schedule", tasks: flat() }));
        for (const a of await claim(10, at, `p@${day}`)) await store.finishAttempt(finish(a, { now: at }));
        return (await store.getRun(`p@${day}`))!;
      }
      const restate = (day: string, at: number, endedBefore: number, taskIds?: string[]) =>
        store.rerun({
          runId: `p@${day}`, graphVersion: "flat", tasks: flat(), taskIds, params: {}, at,
          restate: { triggeredBy: "scheduler", reason: "trailing window", endedBefore },
        });

      it("runs an ended run again as a restatement: trigger, count and time recorded, try numbers continue", async () => {
        const ended = await endedRun("2026-09-01", T0);
        expect(ended).toMatchObject({ state: "success", restateCount: 0, restatedAt: null, restateNote: null });
        const restated = await restate("2026-09-01", T0 + 10, T0 + 5);
        expect(restated).toMatchObject({ state: "queued", trigger: "restate", triggeredBy: "scheduler", reason: "trailing window", restateCount: 1, restatedAt: T0 + 10 });
        const tries = await claim(10, T0 + 11, "p@2026-09-01");
        expect(tries.map((a) => [a.taskId, a.tryNumber, a.trigger])).toEqual([["a", 2, "restate"], ["b", 2, "restate"]]);
        for (const a of tries) await store.finishAttempt(finish(a, { now: T0 + 12 }));
        expect((await restate("2026-09-01", T0 + 20, T0 + 15)).restateCount).toBe(2);
        expect((await store.listRuns({ pipelineId: "p" })).map((r) => r.runId)).toEqual(["p@2026-09-01"]);
      });

      it("refuses a run that is live, or that ended at or after the interval asking for it fired", async () => {
        await endedRun("2026-09-01", T0 + 100);
        await expect(restate("2026-09-01", T0 + 200, T0 + 100)).rejects.toThrow(/already ran after/);
        await restate("2026-09-01", T0 + 200, T0 + 150);
        await expect(restate("2026-09-01", T0 + 201, T0 + 150)).rejects.toThrow(/is queued; it is not restated while live/);
        expect((await store.getRun("p@2026-09-01"))!.restateCount).toBe(1);
      });

      it("resets only the tasks it is given; the others keep their state and try", async () => {
        await endedRun("2026-09-01", T0);
        await restate("2026-09-01", T0 + 10, T0 + 5, ["a"]);
        expect(await states()).toEqual({ a: "queued", b: "success" });
        const [a] = await claim(10, T0 + 11, "p@2026-09-01");
        expect(a).toMatchObject({ taskId: "a", tryNumber: 2 });
        await store.finishAttempt(finish(a!, { now: T0 + 12 }));
        expect((await store.getRun("p@2026-09-01"))!.state).toBe("success");
        expect((await store.listAttempts("p@2026-09-01", "b")).map((x) => x.tryNumber)).toEqual([1]);
      });

      it("claims a restated run's tasks after a live scheduled run's, whatever their priority", async () => {
        await endedRun("2026-09-01", T0);
        await restate("2026-09-01", T0 + 10, T0 + 5);
        await store.createRunIfAbsent(newRun({ runId: "p@2026-09-02", businessDate: "2026-09-02", graphVersion: "flat", trigger: "schedule", tasks: tasksOf(["a"], [], { a: { priority: -5 } }) }));
        const [first] = await claim(1, T0 + 20);
        expect(first).toMatchObject({ runId: "p@2026-09-02", trigger: "schedule" });
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
    });

    describe("watermarks by hand", () => {
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
        const claimed = await store.claimReady({ workerId: "w1", pid: 1, limit: 10, now: T0, leaseMs: 30_000, backfillId: "bf_1", logPath: LOG });
        expect(claimed.map((c) => c.runId)).toEqual(["p@2026-09-01"]);
        expect(await store.claimReady({ workerId: "w1", pid: 1, limit: 10, now: T0, leaseMs: 30_000, backfillId: "bf_1", logPath: LOG })).toEqual([]);
        expect((await claim()).map((c) => c.runId)).toEqual(["p@2026-09-02"]);
      });
    });

    describe("claiming only loaded pipelines", () => {
      it("leaves task instances of pipelines the worker has not loaded for someone who has", async () => {
        await createStandardRun();
        const none = await store.claimReady({ workerId: "w1", pid: 1, limit: 10, now: T0, leaseMs: 30_000, logPath: LOG, pipelineIds: ["other"] });
        expect(none).toEqual([]);
        expect((await states()).a).toBe("queued");
        const mine = await store.claimReady({ workerId: "w1", pid: 1, limit: 10, now: T0, leaseMs: 30_000, logPath: LOG, pipelineIds: ["other", "p"] });
        expect(mine.map((c) => c.taskId)).toEqual(["a"]);
      });
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

    // Every port method the blocks above do not call, by role: each adapter must pass these too.
    describe("every port method, by role", () => {
      describe("pools", () => {
        it("creates missing pools without changing one an operator set, and deletes only what exists", async () => {
          await store.setPool({ name: "db", slots: 5, description: "warehouse", at: T0 });
          await store.ensurePools([{ name: "db", slots: 1 }, { name: "api", slots: 2 }], T0 + 1);
          expect((await store.listPools()).map((p) => [p.name, p.slots, p.description])).toEqual([["api", 2, null], ["db", 5, "warehouse"]]);
          expect(await store.deletePool("api")).toBe(true);
          expect(await store.deletePool("api")).toBe(false);
          expect((await store.listPools()).map((p) => p.name)).toEqual(["db"]);
        });
      });

      describe("workers and leadership", () => {
        it("keeps one row per worker, seen last at its latest heartbeat, and forgets it when it leaves", async () => {
          await store.heartbeatWorker({ workerId: "w1", host: "h1", pid: 11, concurrency: 4, at: T0 });
          await store.heartbeatWorker({ workerId: "w2", host: "h2", pid: 22, concurrency: 8, at: T0 + 1 });
          await store.heartbeatWorker({ workerId: "w1", host: "h1", pid: 11, concurrency: 4, at: T0 + 5_000 });
          const workers = (await store.listWorkers()).sort((a, b) => a.workerId.localeCompare(b.workerId));
          expect(workers).toEqual([
            { workerId: "w1", host: "h1", pid: 11, concurrency: 4, startedAt: T0, lastSeen: T0 + 5_000 },
            { workerId: "w2", host: "h2", pid: 22, concurrency: 8, startedAt: T0 + 1, lastSeen: T0 + 1 },
          ]);
          await store.removeWorker("w1");
          expect((await store.listWorkers()).map((w) => w.workerId)).toEqual(["w2"]);
        });

        it("shows who leads, lets only the holder resign, and gives the next holder a higher term", async () => {
          expect(await store.getLead("scheduler")).toBeNull();
          const first = await store.tryLead({ role: "scheduler", holder: "s1", now: T0, ttlMs: 15_000 });
          expect(await store.getLead("scheduler")).toMatchObject({ holder: "s1", term: first.term, expiresAt: T0 + 15_000 });
          await store.resignLead("scheduler", "s2"); // not the holder: nothing changes
          expect((await store.tryLead({ role: "scheduler", holder: "s2", now: T0 + 1, ttlMs: 15_000 })).leader).toBe(false);
          await store.resignLead("scheduler", "s1");
          const second = await store.tryLead({ role: "scheduler", holder: "s2", now: T0 + 2, ttlMs: 15_000 });
          expect(second.leader).toBe(true);
          expect(second.term).toBeGreaterThan(first.term);
        });
      });

      describe("datasets", () => {
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

      describe("backfills", () => {
        it("reads a backfill, its plan and the list of backfills, and records its state changes", async () => {
          await saveGraph();
          const plan = {
            pipelineId: "p", fromDate: "2026-09-01", toDate: "2026-09-02", reprocess: "none" as const, maxActiveRuns: 1, backwards: false,
            taskIds: null, actor: "ana", reason: "late files", graphVersion: "v1", estimate: {}, at: T0,
            items: [
              { businessDate: "2026-09-01", intervalStart: 0, intervalEnd: 1, action: "create" as const, why: "no run yet", runId: "p@2026-09-01" },
              { businessDate: "2026-09-02", intervalStart: 1, intervalEnd: 2, action: "refuse" as const, why: "frozen", runId: "p@2026-09-02" },
            ],
          };
          await store.createBackfill({ ...plan, backfillId: "bf_1" });
          expect(await store.getBackfill("bf_1")).toMatchObject({ backfillId: "bf_1", state: "running", reason: "late files", endedAt: null });
          expect(await store.getBackfill("bf_none")).toBeNull();
          expect((await store.backfillItems("bf_1")).map((i) => [i.seq, i.businessDate, i.action, i.why])).toEqual([
            [0, "2026-09-01", "create", "no run yet"],
            [1, "2026-09-02", "refuse", "frozen"],
          ]);
          expect((await store.setBackfillState("bf_1", "paused", T0 + 1)).state).toBe("paused");
          expect((await store.listBackfills({ live: true })).map((b) => b.backfillId)).toEqual(["bf_1"]);
          const done = await store.setBackfillState("bf_1", "completed", T0 + 2);
          expect([done.state, done.endedAt]).toEqual(["completed", T0 + 2]);
          expect(await store.listBackfills({ live: true })).toEqual([]);
          expect((await store.listBackfills({ pipelineId: "p" })).map((b) => b.backfillId)).toEqual(["bf_1"]);
          expect(await store.listBackfills({ pipelineId: "other" })).toEqual([]);
          await expect(store.setBackfillState("bf_none", "paused", T0)).rejects.toThrow(/no backfill bf_none/);
        });

        it("estimates from the durations of each task's latest successful attempts", async () => {
          await store.createRunIfAbsent(newRun({ tasks: tasksOf(["a", "b"]) }));
          const claimed = await claim();
          await store.finishAttempt(finish(claimed.find((c) => c.taskId === "a")!, { now: T0 + 4_000 }));
          await store.finishAttempt(finish(claimed.find((c) => c.taskId === "b")!, { now: T0 + 1_000, outcome: "failed", retryable: false }));
          expect(await store.taskDurations("p", 5)).toEqual(new Map([["a", [4_000]]]));
          expect(await store.taskDurations("other", 5)).toEqual(new Map());
        });
      });

      describe("incidents and failures", () => {
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
    });
  });
}
