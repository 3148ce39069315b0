import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pipeline } from "../../src/core/pipeline/define.ts";
import type { Pipeline } from "../../src/core/pipeline/types.ts";
import { externalJobKey } from "../../src/core/policy/external-job.ts";
import { daily } from "../../src/core/time/index.ts";
import { slurmJob } from "../../src/engine/external-jobs/slurm.ts";
import { ScheduleHarness } from "../support/scheduling.ts";
import { slurmAvailable, startSlurmCluster, type SlurmCluster } from "../support/slurm-cluster.ts";
import { processHarness, queryState, waitFor } from "../support/processes.ts";

const available = slurmAvailable();
let cluster: SlurmCluster;

/**
 * The scenarios are independent (each its own pipeline, so its own job names, and its own state
 * store) and run at once against the one cluster: the file takes about as long as its longest
 * scenario, the worker killed while a 30 s job runs, not the sum of them. The cluster lets jobs
 * share its cores (OverSubscribe), so none waits for another's.
 */
describe.skipIf(!available.ok).concurrent("external jobs on a real single-node Slurm cluster", () => {
  beforeAll(async () => {
    cluster = await startSlurmCluster();
  }, 60_000);
  afterAll(async () => cluster?.stop());

  const job = (script: string) => slurmJob({ script: `#!/bin/sh\n${script}\n`, outputDir: cluster.outputDir, env: cluster.env });
  const london = () => daily({ at: "02:00", timezone: "Europe/London" });
  /** A scheduler and worker on a fake clock, closed when the test ends. */
  const harness = async (p: Pipeline, start: string, onFinished: (fn: () => Promise<void>) => void) => {
    const h = await ScheduleHarness.open([p], start);
    onFinished(() => h.close());
    return h;
  };
  const state = (jobId: string) => cluster.job(jobId).JobState;
  /** Waits (real time) until Slurm says the job is in one of these states. */
  const reaches = (jobId: string, states: string[], timeoutMs = 30_000) =>
    waitFor(`Slurm job ${jobId} to be ${states.join(" or ")} (it is ${state(jobId) ?? "unknown"})`, () => {
      const now = state(jobId);
      return now && states.includes(now) ? now : undefined;
    }, timeoutMs);
  /** Waits until Slurm says the job has ended, as a poll a minute later would find it. */
  const ended = (jobId: string) =>
    waitFor(`Slurm job ${jobId} to end`, () => {
      const now = state(jobId);
      return now && !["PENDING", "RUNNING", "COMPLETING", "CONFIGURING"].includes(now) ? now : undefined;
    }, 30_000);
  const handlesOf = async (h: ScheduleHarness, runId: string, taskId?: string) =>
    (await h.store.listExternalJobs(runId, taskId)).map((j) => JSON.parse(j.handle) as { jobId: string; output: string });
  /** The job-completion log's record of each job, once Slurm has written it. */
  const completed = (jobIds: string[], jobState: string) =>
    waitFor(`${jobIds.join(", ")} in the job-completion log as ${jobState}`, () => {
      const records = cluster.completions().filter((c) => jobIds.includes(c.JobId!));
      return records.length === jobIds.length && records.every((c) => c.JobState === jobState) ? records : undefined;
    }, 15_000);

  it("submits with sbatch, records the handle, polls with scontrol and ends with the job's output in the attempt's log", async ({ onTestFinished }) => {
    const p = pipeline("hpc", { schedule: london(), start: "2026-09-01", end: "2026-09-01" }, {
      align: { external: job("echo aligned $SLURM_JOB_NAME; sleep 1"), pollInterval: "1m", pollBackoff: false },
    });
    const h = await harness(p, "2026-09-01T00:00:00Z", onTestFinished);
    await h.at("2026-09-02T01:00:00Z");
    const [record] = await h.store.listExternalJobs("hpc@2026-09-01");
    const [handle] = await handlesOf(h, "hpc@2026-09-01");
    expect(cluster.job(handle!.jobId).JobName).toBe(record!.key);
    expect(await ended(handle!.jobId)).toBe("COMPLETED");
    await h.at("2026-09-02T01:01:00Z");
    expect((await h.runs("hpc"))[0]!.state).toBe("success");
    const last = (await h.store.listAttempts("hpc@2026-09-01", "align")).at(-1)!;
    expect(last.summary).toMatchObject({ slurmJobId: handle!.jobId, exitCode: 0 });
    expect(readFileSync(last.logPath, "utf8")).toContain(`[remote] aligned ${record!.key}`);
    expect(cluster.completions().filter((c) => c.Name === record!.key)).toHaveLength(1);
  });

  it("a failed job fails the try with Slurm's state and exit code; exit 65 is a data error, not retried", async ({ onTestFinished }) => {
    const p = pipeline("hpcfail", { schedule: london(), start: "2026-09-01", end: "2026-09-01" }, {
      align: { external: job("echo bad input >&2; exit 65"), pollInterval: "1m", pollBackoff: false, retries: 3, retryDelay: 0 },
    });
    const h = await harness(p, "2026-09-01T00:00:00Z", onTestFinished);
    await h.at("2026-09-02T01:00:00Z");
    const [handle] = await handlesOf(h, "hpcfail@2026-09-01");
    expect(await ended(handle!.jobId)).toBe("FAILED");
    await h.at("2026-09-02T01:01:00Z");
    const last = (await h.store.listAttempts("hpcfail@2026-09-01", "align")).at(-1)!;
    expect(last).toMatchObject({ state: "failed", errorClass: "DataError" });
    expect(last.errorMessage).toContain(`Slurm job ${handle!.jobId} ended FAILED (exit code 65, NonZeroExitCode)`);
    expect((await h.store.listTaskInstances("hpcfail@2026-09-01"))[0]).toMatchObject({ state: "failed", tryNumber: 1 });
  });

  it("a timeout cancels the running 60 s job with scancel (Slurm records it CANCELLED), fails the try, and the retry submits a new job, cancelled the same way", async ({ onTestFinished }) => {
    const p = pipeline("hpcslow", { schedule: london(), start: "2026-09-01", end: "2026-09-01" }, {
      align: { external: job("sleep 60"), pollInterval: "10m", pollBackoff: false, timeout: "10m", retries: 1, retryDelay: "1h" },
    });
    const h = await harness(p, "2026-09-01T00:00:00Z", onTestFinished);
    await h.at("2026-09-02T01:00:00Z");
    const [first] = await handlesOf(h, "hpcslow@2026-09-01");
    await reaches(first!.jobId, ["RUNNING"]);
    await h.at("2026-09-02T01:10:00Z");
    expect(await ended(first!.jobId)).toBe("CANCELLED");
    expect((await h.store.listExternalJobs("hpcslow@2026-09-01"))[0]).toMatchObject({ state: "cancelled", note: "timed out after 10m from its submission" });
    expect((await h.store.listAttempts("hpcslow@2026-09-01", "align")).at(-1)).toMatchObject({ tryNumber: 1, errorClass: "Timeout" });
    // The retry, an hour later as the policy says, submits a job of its own, which times out too: the task has failed for good.
    await h.at("2026-09-02T02:10:00Z");
    const [, second] = await handlesOf(h, "hpcslow@2026-09-01");
    expect(second!.jobId).not.toBe(first!.jobId);
    await reaches(second!.jobId, ["RUNNING"]);
    await h.at("2026-09-02T02:20:00Z");
    await completed([first!.jobId, second!.jobId], "CANCELLED");
    expect((await h.store.listAttempts("hpcslow@2026-09-01", "align")).filter((a) => a.state === "failed").map((a) => [a.tryNumber, a.errorClass])).toEqual([
      [1, "Timeout"], [2, "Timeout"],
    ]);
    expect((await h.store.listTaskInstances("hpcslow@2026-09-01"))[0]).toMatchObject({ state: "failed", tryNumber: 2 });
  });

  it("a clear while the 60 s job runs cancels it (Slurm records it CANCELLED) and submits a new one", async ({ onTestFinished }) => {
    const p = pipeline("hpcclear", { schedule: london(), start: "2026-09-01", end: "2026-09-01" }, {
      align: { external: job("sleep 60"), pollInterval: "10m", pollBackoff: false },
    });
    const h = await harness(p, "2026-09-01T00:00:00Z", onTestFinished);
    await h.at("2026-09-02T01:00:00Z");
    const [first] = await handlesOf(h, "hpcclear@2026-09-01");
    await reaches(first!.jobId, ["RUNNING"]);
    await h.engine.clear("hpcclear@2026-09-01", { reason: "wrong reference genome" });
    await h.work();
    expect(await ended(first!.jobId)).toBe("CANCELLED");
    await completed([first!.jobId], "CANCELLED");
    const jobs = await h.store.listExternalJobs("hpcclear@2026-09-01");
    expect(jobs.map((j) => [j.state, j.note])).toEqual([["cancelled", "cleared: the task runs again"], ["open", null]]);
    const [, second] = await handlesOf(h, "hpcclear@2026-09-01");
    expect(second!.jobId).not.toBe(first!.jobId);
  });

  it("a mapped task submits one Slurm job per key, named by a key that includes the map key", async ({ onTestFinished }) => {
    const p = pipeline("hpcmap", { schedule: london(), start: "2026-09-01", end: "2026-09-01" }, {
      samples: { run: () => ({ ids: ["s1", "s2"] }) },
      align: { after: ["samples"], map: { items: { task: "samples", field: "ids" } }, external: job("echo sample $SLURM_JOB_NAME"), pollInterval: "1m", pollBackoff: false },
    });
    const h = await harness(p, "2026-09-01T00:00:00Z", onTestFinished);
    await h.at("2026-09-02T01:00:00Z");
    for (const key of ["s1", "s2"]) {
      const [handle] = await handlesOf(h, "hpcmap@2026-09-01", `align[${key}]`);
      expect(cluster.job(handle!.jobId).JobName).toBe(externalJobKey({ pipelineId: "hpcmap", businessDate: "2026-09-01", taskId: "align", mapKey: key, submission: 1 }));
      expect(await ended(handle!.jobId)).toBe("COMPLETED");
    }
    await h.at("2026-09-02T01:01:00Z");
    expect((await h.runs("hpcmap"))[0]!.state).toBe("success");
  });

  describe("with real processes", () => {
    const here = processHarness();

    it("a worker killed with -9 while its 30 s job runs: the next worker reattaches, Slurm ran one job (its completion log), the summary is recorded once", async () => {
      here.create({
        "idem.config.ts": `import { defineConfig } from "idem";\nexport default defineConfig({ workerLeaseMs: 1500, schedulerLeaseMs: 1500 });\n`,
        "pipelines/hpc.ts": `
import { pipeline, daily, slurmJob } from "idem";
export const hpc = pipeline("hpc_proc", { schedule: daily({ at: "00:00" }), start: "2026-09-01", end: "2026-09-01" }, {
  align: {
    external: slurmJob({ script: "#!/bin/sh\\necho started; sleep 30; echo done\\n", outputDir: ${JSON.stringify(cluster.outputDir)}, env: ${JSON.stringify(cluster.env)} }),
    pollInterval: "1s", pollBackoff: false, retries: 2, retryDelay: 0,
  },
});
`,
      });
      here.start("scheduler");
      const doomed = here.start("worker");
      const key = await waitFor("the Slurm job's handle to be recorded", () => queryState<{ job_key: string }>(here.project, "SELECT job_key FROM external_jobs")[0]?.job_key, 30_000);
      const { jobId } = JSON.parse(queryState<{ handle: string }>(here.project, "SELECT handle FROM external_jobs")[0]!.handle) as { jobId: string };
      await waitFor("the worker to poll the running job", () => (queryState<{ n: number }>(here.project, "SELECT count(*) AS n FROM attempts WHERE state = 'rescheduled'")[0]!.n >= 2 ? true : undefined), 30_000);
      expect(await reaches(jobId, ["RUNNING"])).toBe("RUNNING");
      await doomed.kill9();
      const lastBeforeKill = queryState<{ id: number }>(here.project, "SELECT max(attempt_id) AS id FROM attempts")[0]!.id;
      here.start("worker");
      // The new worker polls the same job while it still runs (after the lost attempt's lease
      // lapses, if the kill caught a poll): it reattached, it did not submit.
      await waitFor("the next worker to poll the running job", () =>
        queryState<{ n: number }>(here.project, "SELECT count(*) AS n FROM attempts WHERE state = 'rescheduled' AND attempt_id > ?", lastBeforeKill)[0]!.n > 0 ? true : undefined, 30_000);
      expect(state(jobId)).toBe("RUNNING");
      expect(queryState<{ n: number }>(here.project, "SELECT count(*) AS n FROM external_jobs")[0]!.n).toBe(1);
      const runState = await waitFor("the run to end", () => {
        const [run] = queryState<{ state: string }>(here.project, "SELECT state FROM runs");
        return run && (run.state === "success" || run.state === "failed") ? run.state : undefined;
      }, 60_000);
      expect(runState).toBe("success");
      expect(cluster.completions().filter((c) => c.Name === key)).toEqual([expect.objectContaining({ JobId: jobId, JobState: "COMPLETED" })]);
      const successes = queryState<{ summary: string }>(here.project, "SELECT summary FROM attempts WHERE state = 'success'");
      expect(successes).toHaveLength(1);
      expect(JSON.parse(successes[0]!.summary)).toMatchObject({ exitCode: 0, externalJob: { adapter: "slurm", key } });
      expect(queryState(here.project, "SELECT state FROM external_jobs")).toEqual([{ state: "succeeded" }]);
    }, 90_000);
  });
});
