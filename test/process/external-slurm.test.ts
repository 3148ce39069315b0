import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { pipeline } from "../../src/core/pipeline/define.ts";
import { daily } from "../../src/core/time/index.ts";
import { slurmJob } from "../../src/engine/external-jobs/slurm.ts";
import { ScheduleHarness } from "../support/scheduling.ts";
import { slurmAvailable, startSlurmCluster, type SlurmCluster } from "../support/slurm-cluster.ts";
import { processHarness, queryState, waitFor } from "../support/processes.ts";

const available = slurmAvailable();
let cluster: SlurmCluster;

describe.skipIf(!available.ok)("external jobs on a real single-node Slurm cluster", () => {
  beforeAll(async () => {
    cluster = await startSlurmCluster();
  }, 60_000);
  afterAll(async () => cluster?.stop());

  let h: ScheduleHarness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  const job = (script: string) => slurmJob({ script: `#!/bin/sh\n${script}\n`, outputDir: cluster.outputDir, env: cluster.env });
  const london = () => daily({ at: "02:00", timezone: "Europe/London" });
  /** Waits (real time) until Slurm says the job has ended, as a poll a minute later would find it. */
  const ended = (jobId: string) =>
    waitFor(`Slurm job ${jobId} to end`, () => {
      const state = cluster.job(jobId).JobState;
      return state && !["PENDING", "RUNNING", "COMPLETING", "CONFIGURING"].includes(state) ? state : undefined;
    }, 30_000);
  const handleOf = async (runId: string) => JSON.parse((await h!.store.listExternalJobs(runId)).at(-1)!.handle) as { jobId: string; output: string };

  it("submits with sbatch, records the handle, polls with scontrol and ends with the job's output in the attempt's log", async () => {
    const p = pipeline("hpc", { schedule: london(), start: "2026-09-01", end: "2026-09-01" }, {
      align: { external: job("echo aligned $SLURM_JOB_NAME; sleep 1"), pollInterval: "1m", pollBackoff: false },
    });
    h = await ScheduleHarness.open([p], "2026-09-01T00:00:00Z");
    await h.at("2026-09-02T01:00:00Z");
    const [record] = await h.store.listExternalJobs("hpc@2026-09-01");
    const handle = await handleOf("hpc@2026-09-01");
    expect(cluster.job(handle.jobId).JobName).toBe(record!.key);
    expect(await ended(handle.jobId)).toBe("COMPLETED");
    await h.at("2026-09-02T01:01:00Z");
    expect((await h.runs("hpc"))[0]!.state).toBe("success");
    const last = (await h.store.listAttempts("hpc@2026-09-01", "align")).at(-1)!;
    expect(last.summary).toMatchObject({ slurmJobId: handle.jobId, exitCode: 0 });
    const { readFileSync } = await import("node:fs");
    expect(readFileSync(last.logPath, "utf8")).toContain(`[remote] aligned ${record!.key}`);
    expect(cluster.completions().filter((c) => c.Name === record!.key)).toHaveLength(1);
  });

  it("a failed job fails the try with Slurm's state and exit code; exit 65 is a data error, not retried", async () => {
    const p = pipeline("hpcfail", { schedule: london(), start: "2026-09-01", end: "2026-09-01" }, {
      align: { external: job("echo bad input >&2; exit 65"), pollInterval: "1m", pollBackoff: false, retries: 3, retryDelay: 0 },
    });
    h = await ScheduleHarness.open([p], "2026-09-01T00:00:00Z");
    await h.at("2026-09-02T01:00:00Z");
    const handle = await handleOf("hpcfail@2026-09-01");
    expect(await ended(handle.jobId)).toBe("FAILED");
    await h.at("2026-09-02T01:01:00Z");
    const last = (await h.store.listAttempts("hpcfail@2026-09-01", "align")).at(-1)!;
    expect(last).toMatchObject({ state: "failed", errorClass: "DataError" });
    expect(last.errorMessage).toContain(`Slurm job ${handle.jobId} ended FAILED (exit code 65, NonZeroExitCode)`);
    expect((await h.store.listTaskInstances("hpcfail@2026-09-01"))[0]).toMatchObject({ state: "failed", tryNumber: 1 });
  });

  it("a timeout cancels the job with scancel (Slurm records it CANCELLED), and the retry submits a new one", async () => {
    const p = pipeline("hpcslow", { schedule: london(), start: "2026-09-01", end: "2026-09-01" }, {
      align: { external: job("sleep 600"), pollInterval: "10m", pollBackoff: false, timeout: "10m", retries: 1, retryDelay: "1h" },
    });
    h = await ScheduleHarness.open([p], "2026-09-01T00:00:00Z");
    await h.at("2026-09-02T01:00:00Z");
    const first = await handleOf("hpcslow@2026-09-01");
    await h.at("2026-09-02T01:10:00Z");
    expect(await ended(first.jobId)).toBe("CANCELLED");
    expect((await h.store.listExternalJobs("hpcslow@2026-09-01"))[0]).toMatchObject({ state: "cancelled", note: "timed out after 10m from its submission" });
    expect((await h.store.listAttempts("hpcslow@2026-09-01", "align")).at(-1)).toMatchObject({ errorClass: "Timeout" });
    await h.at("2026-09-02T02:10:00Z");
    const second = await handleOf("hpcslow@2026-09-01");
    expect(second.jobId).not.toBe(first.jobId);
    // A clear while the job runs cancels it too.
    await h.engine.clear("hpcslow@2026-09-01", { reason: "wrong reference genome" });
    await h.work();
    expect(await ended(second.jobId)).toBe("CANCELLED");
    await waitFor("both cancellations in the job-completion log", () => {
      const cancelled = cluster.completions().filter((c) => [first.jobId, second.jobId].includes(c.JobId!) && c.JobState === "CANCELLED");
      return cancelled.length === 2 ? true : undefined;
    }, 10_000);
  });

  describe("with real processes", () => {
    const here = processHarness();

    it("a worker killed with -9 while its job runs: the next worker reattaches, Slurm ran one job, the summary is recorded once", async () => {
      here.create({
        "idem.config.ts": `import { defineConfig } from "idem";\nexport default defineConfig({ workerLeaseMs: 1500, schedulerLeaseMs: 1500 });\n`,
        "pipelines/hpc.ts": `
import { pipeline, daily, slurmJob } from "idem";
export const hpc = pipeline("hpc_proc", { schedule: daily({ at: "00:00" }), start: "2026-09-01", end: "2026-09-01" }, {
  align: {
    external: slurmJob({ script: "#!/bin/sh\\necho started; sleep 8; echo done\\n", outputDir: ${JSON.stringify(cluster.outputDir)}, env: ${JSON.stringify(cluster.env)} }),
    pollInterval: 500, pollBackoff: false, retries: 2, retryDelay: 0,
  },
});
`,
      });
      here.start("scheduler");
      const doomed = here.start("worker");
      const key = await waitFor("the Slurm job's handle to be recorded", () => queryState<{ job_key: string }>(here.project, "SELECT job_key FROM external_jobs")[0]?.job_key, 30_000);
      await waitFor("the job to run", () => (queryState<{ n: number }>(here.project, "SELECT count(*) AS n FROM attempts WHERE state = 'rescheduled'")[0]!.n >= 2 ? true : undefined), 30_000);
      await doomed.kill9();
      here.start("worker");
      const state = await waitFor("the run to end", () => {
        const [run] = queryState<{ state: string }>(here.project, "SELECT state FROM runs");
        return run && (run.state === "success" || run.state === "failed") ? run.state : undefined;
      }, 45_000);
      expect(state).toBe("success");
      expect(cluster.completions().filter((c) => c.Name === key)).toEqual([expect.objectContaining({ JobState: "COMPLETED" })]);
      const successes = queryState<{ summary: string }>(here.project, "SELECT summary FROM attempts WHERE state = 'success'");
      expect(successes).toHaveLength(1);
      expect(JSON.parse(successes[0]!.summary)).toMatchObject({ exitCode: 0, externalJob: { adapter: "slurm", key } });
      expect(queryState(here.project, "SELECT state FROM external_jobs")).toEqual([{ state: "succeeded" }]);
    });
  });
});
