import { describe, expect, it } from "vitest";
import { tasksOf } from "../../support/shapes.ts";
import { T0, type Harness } from "./harness.ts";

export function externalJobsContract(h: Harness): void {
  describe("ExternalJobStore", () => {
    const { store, claim, finish, createStandardRun } = h;
    const job = (attemptId: number, workerId = "w1", handle = '{"id":"j1"}') =>
      ({ attemptId, workerId, key: "idem-p.a-20260901-s1-0123456789abcdef", handle, adapter: "slurm", link: null, at: T0 + 100 });

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
  });
}
