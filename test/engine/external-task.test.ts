import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { pipeline } from "../../src/core/pipeline/define.ts";
import type { ExternalJob, ExternalStatus } from "../../src/core/pipeline/types.ts";
import { daily } from "../../src/core/time/index.ts";
import { externalJobKey } from "../../src/core/policy/external-job.ts";
import { ScheduleHarness } from "../support/scheduling.ts";

let h: ScheduleHarness;
afterEach(async () => h?.close());

const london = (at = "02:00") => daily({ at, timezone: "Europe/London" });

/**
 * A remote engine in memory, as the tests drive it: jobs by id, each submitted with its key; a
 * duplicate key is refused and answered with the job it names (as Databricks' idempotency_token).
 */
class RemoteEngine {
  readonly jobs = new Map<string, { key: string; state: "running" | "succeeded" | "failed" | "cancelled"; error?: string; dataError?: boolean }>();
  readonly submitted: string[] = [];
  readonly cancelled: string[] = [];
  recordedBeforeWait: boolean[] = [];
  #next = 1;

  job(): ExternalJob<{ id: string }> {
    return {
      adapter: "memory",
      submit: (_ctx, key) => {
        const same = [...this.jobs].find(([, j]) => j.key === key);
        if (same) return { id: same[0] };
        const id = `job-${this.#next++}`;
        this.jobs.set(id, { key, state: "running" });
        this.submitted.push(key);
        return { id };
      },
      poll: (handle): ExternalStatus => {
        const job = this.jobs.get(handle.id)!;
        if (job.state === "running") return { state: "running", log: `still at it: ${handle.id}\n` };
        if (job.state === "succeeded") return { state: "succeeded", summary: { rows: 42 }, log: "wrote 42 rows\n" };
        return { state: "failed", error: job.error ?? job.state, dataError: job.dataError };
      },
      cancel: (handle) => {
        const job = this.jobs.get(handle.id)!;
        if (job.state === "running") job.state = "cancelled";
        this.cancelled.push(handle.id);
      },
      link: (handle) => `https://remote.example/jobs/${handle.id}`,
    };
  }

  end(id: string, state: "succeeded" | "failed", extra: { error?: string; dataError?: boolean } = {}) {
    Object.assign(this.jobs.get(id)!, { state, ...extra });
  }
}

describe("external tasks", () => {
  it("submit once, record the handle, poll between attempts that hold nothing, and end with the remote summary", async () => {
    const remote = new RemoteEngine();
    const p = pipeline("spark", { schedule: london(), start: "2026-09-01", end: "2026-09-01" }, {
      transform: { external: remote.job(), pollInterval: "10m", pollBackoff: false, pool: "cluster" },
      publish: { after: ["transform"], run: (ctx) => ({ upstreamRows: (ctx.upstream.transform as { rows: number }).rows }) },
    });
    h = await ScheduleHarness.open([p], "2026-09-01T00:00:00Z");
    await h.engine.setPool("cluster", 1);
    await h.at("2026-09-02T01:00:00Z");
    const [job] = await h.store.listExternalJobs("spark@2026-09-01", "transform");
    expect(job).toMatchObject({ state: "open", handle: JSON.stringify({ id: "job-1" }), adapter: "memory", link: "https://remote.example/jobs/job-1", tryNumber: 1 });
    expect(job!.key).toMatch(/^idem-spark\.transform-20260901-s1-[0-9a-f]{16}$/);
    expect((await h.store.listTaskInstances("spark@2026-09-01")).find((t) => t.taskId === "transform")).toMatchObject({ state: "up_for_reschedule" });
    expect((await h.store.listPools())[0]!.used).toBe(0);
    await h.at("2026-09-02T01:10:00Z");
    await h.at("2026-09-02T01:20:00Z");
    remote.end("job-1", "succeeded");
    await h.at("2026-09-02T01:30:00Z");
    expect(remote.submitted).toHaveLength(1);
    const attempts = await h.store.listAttempts("spark@2026-09-01", "transform");
    expect(attempts.map((a) => a.state)).toEqual(["rescheduled", "rescheduled", "rescheduled", "success"]);
    expect(attempts.at(-1)!.summary).toMatchObject({ rows: 42, externalJob: { adapter: "memory", handle: { id: "job-1" } } });
    expect(readFileSync(attempts.at(-1)!.logPath, "utf8")).toContain("[remote] wrote 42 rows");
    expect((await h.runs("spark"))[0]!.state).toBe("success");
    expect((await h.store.listExternalJobs("spark@2026-09-01"))[0]).toMatchObject({ state: "succeeded" });
  });

  it("a failed job is retried with a new submission under a new key; a data error is not retried", async () => {
    const remote = new RemoteEngine();
    const p = pipeline("flaky", { schedule: london(), start: "2026-09-01", end: "2026-09-01" }, {
      job: { external: remote.job(), pollInterval: "5m", pollBackoff: false, retries: 2, retryDelay: "1m" },
    });
    h = await ScheduleHarness.open([p], "2026-09-01T00:00:00Z");
    await h.at("2026-09-02T01:00:00Z");
    remote.end("job-1", "failed", { error: "executor lost" });
    await h.at("2026-09-02T01:05:00Z");
    await h.at("2026-09-02T01:06:00Z");
    expect(remote.submitted).toHaveLength(2);
    expect(remote.submitted[0]).not.toBe(remote.submitted[1]);
    remote.end("job-2", "failed", { error: "bad rows", dataError: true });
    await h.at("2026-09-02T01:11:00Z");
    const jobs = await h.store.listExternalJobs("flaky@2026-09-01");
    expect(jobs.map((j) => [j.state, j.note])).toEqual([["failed", "executor lost"], ["failed", "bad rows"]]);
    const last = (await h.store.listAttempts("flaky@2026-09-01")).at(-1)!;
    expect(last).toMatchObject({ state: "failed", errorClass: "DataError" });
    expect((await h.store.listTaskInstances("flaky@2026-09-01"))[0]).toMatchObject({ state: "failed", tryNumber: 2 });
  });

  it("a timeout, counted from the submission, cancels the job and records it; the retry submits again", async () => {
    const remote = new RemoteEngine();
    const p = pipeline("slow", { schedule: london(), start: "2026-09-01", end: "2026-09-01" }, {
      job: { external: remote.job(), pollInterval: "20m", pollBackoff: false, timeout: "30m", retries: 1, retryDelay: "1m" },
    });
    h = await ScheduleHarness.open([p], "2026-09-01T00:00:00Z");
    for (const t of ["01:00", "01:20", "01:30", "01:31"]) await h.at(`2026-09-02T${t}:00Z`);
    expect(remote.cancelled).toEqual(["job-1"]);
    expect(remote.jobs.get("job-1")!.state).toBe("cancelled");
    const jobs = await h.store.listExternalJobs("slow@2026-09-01");
    expect(jobs.map((j) => [j.state, j.note])).toEqual([["cancelled", "timed out after 30m from its submission"], ["open", null]]);
    const attempts = await h.store.listAttempts("slow@2026-09-01");
    expect(attempts.map((a) => [a.tryNumber, a.state, a.errorClass])).toEqual([
      [1, "rescheduled", null], [1, "rescheduled", null], [1, "failed", "Timeout"], [2, "rescheduled", null],
    ]);
  });

  it("a clear cancels the job its task instance waited on, and the task runs again with a new submission", async () => {
    const remote = new RemoteEngine();
    const p = pipeline("cleared", { schedule: london(), start: "2026-09-01", end: "2026-09-01" }, {
      job: { external: remote.job(), pollInterval: "10m", pollBackoff: false },
    });
    h = await ScheduleHarness.open([p], "2026-09-01T00:00:00Z");
    await h.at("2026-09-02T01:00:00Z");
    await h.engine.clear("cleared@2026-09-01", { reason: "wrong input" });
    expect((await h.store.listExternalJobs("cleared@2026-09-01"))[0]).toMatchObject({ state: "cancel_requested", note: "cleared: the task runs again" });
    await h.at("2026-09-02T01:01:00Z");
    expect(remote.cancelled).toEqual(["job-1"]);
    expect(remote.submitted).toHaveLength(2);
    const jobs = await h.store.listExternalJobs("cleared@2026-09-01");
    expect(jobs.map((j) => j.state)).toEqual(["cancelled", "open"]);
  });

  it("a cancelled backfill and a settle by hand cancel the jobs their task instances waited on, through any worker", async () => {
    const remote = new RemoteEngine();
    const p = pipeline("history", { schedule: "manual", timezone: "Europe/London" }, {
      job: { external: remote.job(), pollInterval: "10m", pollBackoff: false },
    });
    h = await ScheduleHarness.open([p], "2026-09-10T00:00:00Z");
    const { backfill } = await h.engine.backfill("history", { from: "2026-09-01", to: "2026-09-02", maxActiveRuns: 2, reason: "reload" });
    await h.at("2026-09-10T00:01:00Z");
    expect(remote.submitted).toHaveLength(2);
    await h.engine.mark("history@2026-09-02", "job", { state: "success", reason: "loaded by hand", actor: "ana" });
    await h.engine.controlBackfill(backfill.backfillId, "cancel", { actor: "ops", reason: "wrong range" });
    const requested = await h.store.listExternalJobs("history@2026-09-01");
    expect(requested[0]).toMatchObject({ state: "cancel_requested" });
    expect(requested[0]!.note).toContain("backfill cancelled: backfill");
    expect((await h.store.listExternalJobs("history@2026-09-02"))[0]!.note).toBe("settled by hand as success: loaded by hand");
    await h.at("2026-09-10T00:02:00Z");
    expect(remote.cancelled.sort()).toEqual(["job-1", "job-2"]);
    for (const date of ["2026-09-01", "2026-09-02"]) {
      expect((await h.store.listExternalJobs(`history@${date}`)).map((j) => j.state)).toEqual(["cancelled"]);
    }
  });

  it("a poll that fails on the last try cancels the job, so none runs on unwatched; an earlier try's failure keeps it for the retry", async () => {
    const remote = new RemoteEngine();
    let pollErrors = 0;
    const base = remote.job();
    const job: ExternalJob<{ id: string }> = { ...base, poll: (handle, ctx) => (pollErrors-- > 0 ? Promise.reject(new Error("503 from the API")) : base.poll(handle, ctx)) };
    const p = pipeline("unreachable", { schedule: london(), start: "2026-09-01", end: "2026-09-01" }, {
      job: { external: job, pollInterval: "10m", pollBackoff: false, retries: 1, retryDelay: "1m" },
    });
    h = await ScheduleHarness.open([p], "2026-09-01T00:00:00Z");
    await h.at("2026-09-02T01:00:00Z");
    pollErrors = 1;
    await h.at("2026-09-02T01:10:00Z"); // try 1 fails; the job stays open for try 2
    expect((await h.store.listExternalJobs("unreachable@2026-09-01"))[0]).toMatchObject({ state: "open" });
    pollErrors = 1;
    await h.at("2026-09-02T01:11:00Z"); // try 2, the last: its poll fails, the job is cancelled
    expect(remote.cancelled).toEqual(["job-1"]);
    expect((await h.store.listExternalJobs("unreachable@2026-09-01")).map((j) => [j.state, j.note])).toEqual([
      ["cancelled", "polling it failed on the last try: 503 from the API"],
    ]);
    const last = (await h.store.listAttempts("unreachable@2026-09-01")).at(-1)!;
    expect(last).toMatchObject({ tryNumber: 2, state: "failed" });
    expect(last.errorMessage).toContain('memory job {"id":"job-1"} cancelled');
    expect(remote.submitted).toHaveLength(1);
  });

  it("a pause with stop skips the external tasks waiting on remote jobs and cancels their jobs; a plain pause leaves them", async () => {
    const remote = new RemoteEngine();
    const p = pipeline("stopped", { schedule: london(), start: "2026-09-01", end: "2026-09-01" }, {
      job: { external: remote.job(), pollInterval: "10m", pollBackoff: false },
      after_job: { after: ["job"], run: () => {} },
    });
    h = await ScheduleHarness.open([p], "2026-09-01T00:00:00Z");
    await h.at("2026-09-02T01:00:00Z");
    await h.engine.pause("stopped", { note: "maintenance", actor: "ops" });
    expect((await h.store.listExternalJobs("stopped@2026-09-01"))[0]).toMatchObject({ state: "open" });
    await h.engine.pause("stopped", { note: "cluster migration", stop: true, actor: "ops" });
    const tasks = Object.fromEntries((await h.store.listTaskInstances("stopped@2026-09-01")).map((t) => [t.taskId, [t.state, t.reason]]));
    expect(tasks.job).toEqual(["skipped", "skipped by ops: stopped with the pipeline's pause: cluster migration"]);
    expect(tasks.after_job![0]).toBe("skipped");
    await h.work();
    expect(remote.cancelled).toEqual(["job-1"]);
    expect((await h.store.listExternalJobs("stopped@2026-09-01"))[0]).toMatchObject({ state: "cancelled" });
  });

  it("a pause with stop reaches an external task whose poll is running at that moment: it waits for the poll, then skips it and cancels its job", async () => {
    const remote = new RemoteEngine();
    const job = remote.job();
    let pollEntered!: () => void;
    const entered = new Promise<void>((r) => (pollEntered = r));
    let releasePoll!: () => void;
    const released = new Promise<void>((r) => (releasePoll = r));
    let blocking = false;
    const slowPoll: ExternalJob<{ id: string }> = {
      ...job,
      poll: async (handle, ctx) => {
        if (blocking) {
          pollEntered();
          await released;
        }
        return job.poll(handle, ctx);
      },
    };
    const p = pipeline("stopped", { schedule: london(), start: "2026-09-01", end: "2026-09-01" }, {
      job: { external: slowPoll, pollInterval: "10m", pollBackoff: false },
    });
    h = await ScheduleHarness.open([p], "2026-09-01T00:00:00Z");
    await h.at("2026-09-02T01:00:00Z");
    blocking = true;
    const polling = h.at("2026-09-02T01:10:00Z");
    await entered;
    expect((await h.store.listTaskInstances("stopped@2026-09-01"))[0]).toMatchObject({ state: "running" });
    const pausing = h.engine.pause("stopped", { note: "cluster migration", stop: true, actor: "ops" });
    releasePoll();
    await Promise.all([polling, pausing]);
    expect((await h.store.listTaskInstances("stopped@2026-09-01"))[0]).toMatchObject({ state: "skipped", reason: "skipped by ops: stopped with the pipeline's pause: cluster migration" });
    await h.work();
    expect(remote.cancelled).toEqual(["job-1"]);
    expect((await h.store.listExternalJobs("stopped@2026-09-01"))[0]).toMatchObject({ state: "cancelled" });
  });
  it("with holdPoolWhileRemote the remote jobs hold the pool: at most pool size / slots submitted at once, their slots back when a job ends or is cleared", async () => {
    const remote = new RemoteEngine();
    const p = pipeline("hpc", { schedule: "manual", timezone: "Europe/London" }, {
      job: { external: remote.job(), pollInterval: "10m", pollBackoff: false, pool: "slurm", slots: 4, holdPoolWhileRemote: true },
    });
    h = await ScheduleHarness.open([p], "2026-09-10T00:00:00Z");
    await h.engine.setPool("slurm", 8);
    await h.engine.backfill("hpc", { from: "2026-09-01", to: "2026-09-05", maxActiveRuns: 5, reason: "reload" });
    await h.at("2026-09-10T00:01:00Z");
    expect(remote.submitted).toHaveLength(2);
    const holders = async () => (await h.engine.pools())[0]!.holders.map((x) => [x.runId, x.remote, x.workerId]);
    const holding = await holders();
    expect(holding).toEqual([[expect.any(String), true, null], [expect.any(String), true, null]]);
    expect((await h.engine.pools())[0]).toMatchObject({ used: 8 });
    const waiting = (await h.store.listTaskInstances("hpc@2026-09-05"))[0]!.state === "queued" ? "hpc@2026-09-05" : "hpc@2026-09-04";
    expect((await h.engine.why(waiting, "job")).join("\n")).toMatch(/pool slurm full \(8\/8 slots, held by hpc@\S+ job \(its remote job\), hpc@\S+ job \(its remote job\)\)/);
    expect((await h.engine.why(holding[0]![0] as string, "job")).join("\n")).toMatch(/job: waiting on its remote job \(memory \{"id":"job-\d"\}, submitted .+, holding 4 slots of pool slurm\); next poll at /);
    // Their polls run with the pool full, find the jobs running, and submit nothing more.
    await h.at("2026-09-10T00:11:00Z");
    expect(remote.submitted).toHaveLength(2);
    expect(await holders()).toEqual(holding);
    remote.end("job-1", "succeeded");
    await h.at("2026-09-10T00:21:00Z");
    expect(remote.submitted).toHaveLength(3);
    expect((await h.engine.pools())[0]).toMatchObject({ used: 8 });
    // A clear asks to cancel the job: its slots come back at once, and the next waiting task takes them.
    const jobRun = async (id: string) => {
      for (const [runId] of holding) if ((await h.store.listExternalJobs(runId as string))[0]!.handle === JSON.stringify({ id })) return runId as string;
      throw new Error(`no run holds ${id}`);
    };
    const cleared = await jobRun("job-2");
    await h.engine.clear(cleared, { reason: "wrong input" });
    expect((await h.engine.pools())[0]).toMatchObject({ used: 4 });
    await h.at("2026-09-10T00:22:00Z");
    expect(remote.cancelled).toEqual(["job-2"]);
    expect(remote.submitted).toHaveLength(4);
    expect((await h.engine.pools())[0]).toMatchObject({ used: 8 });
    for (const id of ["job-3", "job-4"]) remote.end(id, "succeeded");
    await h.at("2026-09-10T00:40:00Z");
    await h.at("2026-09-10T01:00:00Z");
    await h.at("2026-09-10T01:20:00Z");
    for (const id of ["job-5", "job-6"]) remote.end(id, "succeeded");
    await h.at("2026-09-10T01:40:00Z");
    expect(remote.submitted).toHaveLength(6);
    expect((await h.runs("hpc")).map((r) => r.state)).toEqual(["success", "success", "success", "success", "success"]);
    expect((await h.engine.pools())[0]).toMatchObject({ used: 0, holders: [] });
  });

  it("holdPoolWhileRemote needs a pool", () => {
    expect(() => pipeline("nopool", { schedule: "manual" }, { job: { external: new RemoteEngine().job(), holdPoolWhileRemote: true } })).toThrow(
      /holdPoolWhileRemote needs a pool/,
    );
  });
  it("a mapped external task submits one job per key under a key that names it, and a clear of one key cancels and resubmits that key's job alone", async () => {
    const remote = new RemoteEngine();
    const base = remote.job();
    const seen: string[] = [];
    const perKey: ExternalJob<{ id: string }> = { ...base, submit: (ctx, key) => (seen.push(`${ctx.mapKey}=${JSON.stringify(ctx.item)}`), base.submit(ctx, key)) };
    const p = pipeline("regions", { schedule: london(), start: "2026-09-01", end: "2026-09-01" }, {
      list: { run: () => ({ regions: [{ name: "eu" }, { name: "us" }, { name: "ap" }] }) },
      load: { after: ["list"], map: { items: { task: "list", field: "regions" }, key: (r: { name: string }) => r.name }, external: perKey, pollInterval: "10m", pollBackoff: false },
      report: { after: ["load"], run: async (ctx) => ({ rows: (await ctx.mapped("load")).instances.map((i) => `${i.key}:${i.summary?.rows}`) }) },
    });
    h = await ScheduleHarness.open([p], "2026-09-01T00:00:00Z");
    await h.at("2026-09-02T01:00:00Z");
    expect(seen.sort()).toEqual(['ap={"name":"ap"}', 'eu={"name":"eu"}', 'us={"name":"us"}']);
    const keyOf = (region: string) => externalJobKey({ pipelineId: "regions", businessDate: "2026-09-01", taskId: "load", mapKey: region, submission: 1 });
    const jobs = async (region: string) => h.store.listExternalJobs("regions@2026-09-01", `load[${region}]`);
    for (const region of ["eu", "us", "ap"]) expect(await jobs(region)).toEqual([expect.objectContaining({ state: "open", key: keyOf(region) })]);
    expect(new Set(remote.submitted).size).toBe(3);
    const usJob = JSON.parse((await jobs("us"))[0]!.handle) as { id: string };
    await h.engine.clear("regions@2026-09-01", { taskId: "load[us]", reason: "us reloaded upstream" });
    await h.at("2026-09-02T01:01:00Z");
    expect(remote.cancelled).toEqual([usJob.id]);
    expect(remote.submitted).toHaveLength(4);
    expect((await jobs("us")).map((j) => [j.state, j.key])).toEqual([["cancelled", keyOf("us")], ["open", externalJobKey({ pipelineId: "regions", businessDate: "2026-09-01", taskId: "load", mapKey: "us", submission: 2 })]]);
    for (const region of ["eu", "ap"]) expect((await jobs(region)).map((j) => j.state)).toEqual(["open"]);
    for (const [id, job] of remote.jobs) if (job.state === "running") remote.end(id, "succeeded");
    await h.at("2026-09-02T01:11:00Z");
    expect((await h.runs("regions"))[0]!.state).toBe("success");
    const report = (await h.store.listAttempts("regions@2026-09-01", "report")).at(-1)!;
    expect(report.summary).toEqual({ rows: ["ap:42", "eu:42", "us:42"] });
  });
});
