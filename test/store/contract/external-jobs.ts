import { describe, expect, it } from "vitest";
import { newRun, tasksOf } from "../../support/shapes.ts";
import { T0, type Harness } from "./harness.ts";

const RUN_ID = "p@2026-09-01";

export function externalJobsContract(h: Harness): void {
  describe("ExternalJobStore", () => {
    const { store, claim, finish, createStandardRun, saveGraph } = h;
    const job = (attemptId: number, workerId = "w1", handle = '{"id":"j1"}', holdsPool = false) =>
      ({ attemptId, workerId, key: "idem-p.a-20260901-s1-0123456789abcdef", handle, adapter: "slurm", link: null, at: T0 + 100, holdsPool });

    it("records a handle for the current attempt only, one open job per task instance, and a retry finds it", async () => {
      await createStandardRun({ a: { maxTries: 3 } });
      const [a] = await claim(1);
      expect(await store.recordExternalJob(job(a!.attemptId, "w2"))).toBeNull(); // another worker's attempt
      const recorded = await store.recordExternalJob(job(a!.attemptId));
      expect(recorded).toMatchObject({
        runId: "p@2026-09-01", pipelineId: "p", taskId: "a", attemptId: a!.attemptId, tryNumber: 1, handle: '{"id":"j1"}',
        adapter: "slurm", state: "open", submittedAt: T0 + 100, endedAt: null, note: null,
      });
      expect(await store.recordExternalJob(job(a!.attemptId, "w1", '{"id":"j2"}'))).toBeNull(); // one open job at a time
      // The worker dies: its attempt is lost, and the retry (another worker) finds the job, not a blank.
      expect((await store.loseAttempt({ attemptId: a!.attemptId, now: T0 + 30_001, retryAt: T0 + 30_001 })).accepted).toBe(true);
      const [retry] = await claim(1, T0 + 30_002, undefined, "w2");
      expect(retry).toMatchObject({ taskId: "a", tryNumber: 2 });
      expect(await store.externalJobOf("p@2026-09-01", "a")).toEqual({ job: recorded, submissions: 1 });
      // The stale attempt can neither record a new handle nor end the job; the current one can.
      expect(await store.recordExternalJob(job(a!.attemptId, "w1", '{"id":"j3"}'))).toBeNull();
      expect(await store.endExternalJob({ jobId: recorded!.jobId, state: "failed", at: T0 + 30_003, note: "stale", by: { attemptId: a!.attemptId, workerId: "w1" } })).toBe(false);
      expect(await store.endExternalJob({ jobId: recorded!.jobId, state: "succeeded", at: T0 + 30_004, note: null, by: { attemptId: retry!.attemptId, workerId: "w2" } })).toBe(true);
      expect(await store.endExternalJob({ jobId: recorded!.jobId, state: "failed", at: T0 + 30_005, note: null, by: { attemptId: retry!.attemptId, workerId: "w2" } })).toBe(false);
      expect(await store.externalJobOf("p@2026-09-01", "a")).toEqual({ job: null, submissions: 1 });
      expect(await store.externalJobOf("p@2026-09-01", "b")).toEqual({ job: null, submissions: 0 });
      expect(await store.listExternalJobs("p@2026-09-01", "a")).toEqual([{ ...recorded, state: "succeeded", endedAt: T0 + 30_004 }]);
    });

    it("asks to cancel the job of a task instance that no longer waits on it, and records the cancel once", async () => {
      await createStandardRun();
      const [a] = await claim(1);
      const recorded = (await store.recordExternalJob(job(a!.attemptId)))!;
      await store.finishAttempt(finish(a!, { outcome: "rescheduled", retryAt: T0 + 60_000 }));
      // Between polls the task instance still waits on its job; a clear of it does not.
      expect(await store.externalJobsToCancel(["p"], 10)).toEqual([]);
      const tasks = tasksOf(["a", "b", "c", "d"], [["a", "b"], ["b", "c"], ["a", "d"]]);
      // A rerun that resumes a run whose process died (`idem run` again) keeps the job: the task reattaches.
      await store.rerun({ runId: "p@2026-09-01", graphVersion: "v1", tasks, taskIds: ["a"], params: {}, at: T0 + 1_500, resume: true });
      expect((await store.externalJobOf("p@2026-09-01", "a")).job).toMatchObject({ state: "open" });
      await store.rerun({ runId: "p@2026-09-01", graphVersion: "v1", tasks, taskIds: ["a"], params: {}, at: T0 + 2_000 });
      const [requested] = await store.externalJobsToCancel(["p"], 10);
      expect(requested).toMatchObject({ jobId: recorded.jobId, state: "cancel_requested", note: "cleared: the task runs again" });
      expect(await store.externalJobsToCancel(["other"], 10)).toEqual([]);
      expect((await store.externalJobOf("p@2026-09-01", "a")).job).toMatchObject({ state: "cancel_requested" });
      expect(await store.endExternalJob({ jobId: recorded.jobId, state: "cancelled", at: T0 + 3_000, note: null, by: null })).toBe(true);
      expect(await store.endExternalJob({ jobId: recorded.jobId, state: "cancelled", at: T0 + 3_001, note: null, by: null })).toBe(false);
      expect(await store.listExternalJobs("p@2026-09-01")).toEqual([{ ...recorded, state: "cancelled", endedAt: T0 + 3_000, note: "cleared: the task runs again" }]);
      expect(await store.externalJobsToCancel(["p"], 10)).toEqual([]);
    });
    /** The pool's use and holders (`b`: running; `a remote`: its remote job holds the slots between polls). */
    const pool = async () => {
      const [p] = await store.listPools();
      return { used: p!.used, holders: p!.holders.map((x) => `${x.taskId}${x.remote ? " remote" : ""}`).sort() };
    };

    it("a job recorded holding its pool counts in it between polls, once, and its polls and its retry after a lost attempt are claimed into the full pool", async () => {
      await saveGraph("flat", []);
      await store.setPool({ name: "slurm", slots: 8, at: T0 });
      const four = { pool: "slurm", slots: 4 };
      const tasks = tasksOf(["a", "b", "c"], [], { a: { ...four, maxTries: 3 }, b: four, c: four });
      await store.createRunIfAbsent(newRun({ graphVersion: "flat", tasks }));
      const [a, b] = await claim(10);
      expect([a!.taskId, b!.taskId]).toEqual(["a", "b"]);
      const held = (await store.recordExternalJob(job(a!.attemptId, "w1", '{"id":"a"}', true)))!;
      expect(held).toMatchObject({ heldPool: "slurm", heldSlots: 4 });
      expect(await pool()).toEqual({ used: 8, holders: ["a", "b"] });
      await store.finishAttempt(finish(a!, { outcome: "rescheduled", retryAt: T0 + 60_000 }));
      expect(await pool()).toEqual({ used: 8, holders: ["a remote", "b"] });
      // b's job holds nothing: its slots come back between polls and c takes them; a's stay held.
      expect(await store.recordExternalJob(job(b!.attemptId, "w1", '{"id":"b"}'))).toMatchObject({ heldPool: null, heldSlots: 0 });
      await store.finishAttempt(finish(b!, { outcome: "rescheduled", retryAt: T0 + 60_000 }));
      expect((await claim(10, T0 + 2_000)).map((x) => x.taskId)).toEqual(["c"]);
      expect(await pool()).toEqual({ used: 8, holders: ["a remote", "c"] });
      // Both polls fall due with the pool full: a's takes no new slot (its job holds them), b's waits.
      const [poll, ...none] = await claim(10, T0 + 60_000);
      expect(poll).toMatchObject({ taskId: "a" });
      expect(none).toEqual([]);
      expect(await pool()).toEqual({ used: 8, holders: ["a", "c"] });
      // The worker dies: the job still runs and holds its slots, once; the retry reattaches into the full pool.
      expect((await store.loseAttempt({ attemptId: poll!.attemptId, now: T0 + 90_001, retryAt: T0 + 90_001 })).accepted).toBe(true);
      expect(await pool()).toEqual({ used: 8, holders: ["a remote", "c"] });
      const [retry, ...nothing] = await claim(10, T0 + 90_002, undefined, "w2");
      expect(retry).toMatchObject({ taskId: "a", tryNumber: 2 });
      expect(nothing).toEqual([]);
      expect((await store.listPools())[0]!.used).toBe(8);
      // The job ends: counted as the running attempt until it finishes, then the slots are free.
      expect(await store.endExternalJob({ jobId: held.jobId, state: "succeeded", at: T0 + 90_003, note: null, by: { attemptId: retry!.attemptId, workerId: "w2" } })).toBe(true);
      expect(await pool()).toEqual({ used: 8, holders: ["a", "c"] });
      await store.finishAttempt({ ...finish(retry!), workerId: "w2", now: T0 + 90_004 });
      expect(await pool()).toEqual({ used: 4, holders: ["c"] });
      expect((await claim(10, T0 + 90_005)).map((x) => x.taskId)).toEqual(["b"]);
    });

    it("a job's slots come back when a clear asks to cancel it, and when its task instance ends for good with the job still open", async () => {
      await saveGraph("flat", []);
      await store.setPool({ name: "slurm", slots: 4, at: T0 });
      const tasks = tasksOf(["a", "b"], [], { a: { pool: "slurm", slots: 4 }, b: { pool: "slurm", slots: 4 } });
      await store.createRunIfAbsent(newRun({ graphVersion: "flat", tasks }));
      const [a] = await claim(1);
      expect(a).toMatchObject({ taskId: "a" });
      await store.recordExternalJob(job(a!.attemptId, "w1", '{"id":"a1"}', true));
      await store.finishAttempt(finish(a!, { outcome: "rescheduled", retryAt: T0 + 60_000 }));
      expect(await claim(10, T0 + 2_000)).toEqual([]);
      expect(await pool()).toEqual({ used: 4, holders: ["a remote"] });
      await store.rerun({ runId: "p@2026-09-01", graphVersion: "flat", tasks, taskIds: ["a"], params: {}, at: T0 + 3_000 });
      expect((await store.externalJobOf("p@2026-09-01", "a")).job).toMatchObject({ state: "cancel_requested" });
      expect(await pool()).toEqual({ used: 0, holders: [] });
      // b takes the pool; then a again, whose new job holds it; a poll that fails for good leaves
      // the job open (its cancel failed too), and the pool is free all the same.
      const [b] = await claim(1, T0 + 4_000);
      expect(b).toMatchObject({ taskId: "b" });
      await store.finishAttempt(finish(b!, { now: T0 + 5_000 }));
      const [again] = await claim(1, T0 + 6_000);
      expect(again).toMatchObject({ taskId: "a" });
      const cancelled = (await store.externalJobOf("p@2026-09-01", "a")).job!;
      expect(await store.endExternalJob({ jobId: cancelled.jobId, state: "cancelled", at: T0 + 6_001, note: null, by: null })).toBe(true);
      await store.recordExternalJob(job(again!.attemptId, "w1", '{"id":"a2"}', true));
      expect(await pool()).toEqual({ used: 4, holders: ["a"] });
      await store.finishAttempt(finish(again!, { outcome: "failed", retryable: false, errorClass: "TaskFailed", errorMessage: "poll failed", now: T0 + 7_000 }));
      expect((await store.listTaskInstances("p@2026-09-01")).find((t) => t.taskId === "a")).toMatchObject({ state: "failed" });
      expect(await pool()).toEqual({ used: 0, holders: [] });
    });
    it("a mapped instance has its own job, and a clear of some keys asks to cancel those keys' jobs only", async () => {
      const edges = await saveGraph("mapped", [["load", "report"]]);
      const tasks = tasksOf(["load", "report"], edges);
      await store.createRunIfAbsent(newRun({ graphVersion: "mapped", tasks }));
      const [load] = await claim();
      await store.finishAttempt(finish(load!, { map: { items: ["eu", "us"].map((key) => ({ key, item: JSON.stringify(key) })), maxActive: null } }));
      const instances = await claim(10, T0 + 1_500);
      expect(instances.map((i) => i.taskId).sort()).toEqual(["load[eu]", "load[us]"]);
      for (const i of instances) {
        expect(await store.recordExternalJob({ ...job(i.attemptId, "w1", JSON.stringify({ id: i.mapKey })), key: `k-${i.mapKey}` })).toMatchObject({ taskId: i.taskId, state: "open" });
        await store.finishAttempt(finish(i, { outcome: "rescheduled", retryAt: T0 + 60_000, now: T0 + 2_000 }));
      }
      expect((await store.externalJobOf(RUN_ID, "load[us]")).job).toMatchObject({ key: "k-us", state: "open" });
      await store.clearKeys({ runId: RUN_ID, taskId: "load", selector: "us", chain: [], downstream: ["report"], tasks, at: T0 + 3_000 });
      expect((await store.externalJobOf(RUN_ID, "load[us]")).job).toMatchObject({ key: "k-us", state: "cancel_requested", note: "cleared: the task runs again" });
      expect((await store.externalJobOf(RUN_ID, "load[eu]")).job).toMatchObject({ key: "k-eu", state: "open" });
      expect((await store.externalJobsToCancel(["p"], 10)).map((j) => j.taskId)).toEqual(["load[us]"]);
    });
  });
}
