import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { processHarness, queryState, repo, startIdem, waitFor } from "../support/processes.ts";

const here = processHarness();

const CONFIG = `import { defineConfig } from "idem";
export default defineConfig({ workerLeaseMs: 1500, schedulerLeaseMs: 1500, concurrency: 4 });
`;

/**
 * A remote engine made of files in the project, as a test drives it: a job is a folder named by
 * its key (a second submit under a key answers the job it names, as an engine with idempotency
 * tokens does), each submission is a line in "submissions", and the test ends a job by writing
 * its "state". A step blocks for a minute while its "block-<step>" file exists, so that a worker
 * can be killed in the middle of it.
 */
const REMOTE = `
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import type { ExternalJob } from "idem";
const root = new URL(".", import.meta.url).pathname;
const blocking = async (step: string) => {
  if (!existsSync(root + "block-" + step)) return;
  writeFileSync(root + "blocked-" + step, String(process.pid));
  await new Promise((r) => setTimeout(r, 60_000));
};
export const remote: ExternalJob<{ key: string }> = {
  adapter: "files",
  async submit(_ctx, key) {
    const dir = root + "jobs/" + key;
    if (!existsSync(dir)) {
      mkdirSync(dir, { recursive: true });
      writeFileSync(dir + "/state", "running");
      appendFileSync(root + "submissions", key + "\\n");
    }
    await blocking("submit");
    return { key };
  },
  async poll(handle) {
    await blocking("poll");
    const state = readFileSync(root + "jobs/" + handle.key + "/state", "utf8");
    if (state === "succeeded") return { state: "succeeded", summary: { rows: 7 }, log: "remote: wrote 7 rows\\n" };
    if (state === "running") return { state: "running" };
    return { state: "failed", error: state };
  },
  cancel(handle) {
    writeFileSync(root + "jobs/" + handle.key + "/state", "cancelled");
  },
};
`;

const PIPELINE = (schedule: string) => `
import { pipeline, daily } from "idem";
import { remote } from "../remote.ts";
export const remoteLoad = pipeline("remote_load", { schedule: ${schedule}, timezone: "UTC", start: "2026-09-01", end: "2026-09-01" }, {
  load: { external: remote, pollInterval: 200, pollBackoff: false, retries: 3, retryDelay: 0 },
});
`;

const submissions = () => (existsSync(join(here.project, "submissions")) ? readFileSync(join(here.project, "submissions"), "utf8").trim().split("\n") : []);
const endJob = (state: string) => {
  const [key] = submissions();
  writeFileSync(join(here.project, "jobs", key!, "state"), state);
};
const runEnded = () => waitFor("the run to end", () => {
  const [run] = queryState<{ state: string }>(here.project, "SELECT state FROM runs");
  return run && (run.state === "success" || run.state === "failed") ? run.state : undefined;
}, 45_000);
const jobs = () => queryState<{ state: string; try_number: number; attempt_id: number }>(here.project, "SELECT state, try_number, attempt_id FROM external_jobs ORDER BY job_id");
const attempts = () => queryState<{ try_number: number; state: string; error_class: string | null; summary: string | null }>(
  here.project, "SELECT try_number, state, error_class, summary FROM attempts ORDER BY attempt_id",
);

describe("external jobs with real processes", () => {
  it("reattaches after the worker is killed with -9 while polling: one job submitted, its summary recorded once", async () => {
    here.create({ "idem.config.ts": CONFIG, "remote.ts": REMOTE, "pipelines/remote.ts": PIPELINE(`daily({ at: "00:00" })`) });
    here.start("scheduler");
    const doomed = here.start("worker");
    await waitFor("the job to be submitted and its handle recorded", () => (jobs().length === 1 ? true : undefined));
    writeFileSync(join(here.project, "block-poll"), "");
    await waitFor("a poll to block", () => (existsSync(join(here.project, "blocked-poll")) ? true : undefined));
    await doomed.kill9();
    rmSync(join(here.project, "block-poll"));
    endJob("succeeded");
    here.start("worker");
    expect(await runEnded()).toBe("success");
    expect(submissions()).toHaveLength(1);
    expect(jobs()).toEqual([expect.objectContaining({ state: "succeeded", try_number: 1 })]);
    const all = attempts();
    expect(all.filter((a) => a.state === "lost")).toEqual([expect.objectContaining({ try_number: 1, error_class: "LeaseExpired" })]);
    const successes = all.filter((a) => a.state === "success");
    expect(successes).toHaveLength(1);
    expect(successes[0]!.try_number).toBe(2);
    expect(JSON.parse(successes[0]!.summary!)).toMatchObject({ rows: 7, externalJob: { adapter: "files" } });
  }, 60_000);

  it("after a kill -9 between the submit and the record, the retry submits under the same key and the engine refuses a second job", async () => {
    here.create({ "idem.config.ts": CONFIG, "remote.ts": REMOTE, "block-submit": "", "pipelines/remote.ts": PIPELINE(`daily({ at: "00:00" })`) });
    here.start("scheduler");
    const doomed = here.start("worker");
    await waitFor("a submit to block before its handle is recorded", () => (existsSync(join(here.project, "blocked-submit")) ? true : undefined));
    expect(jobs()).toEqual([]);
    await doomed.kill9();
    rmSync(join(here.project, "block-submit"));
    here.start("worker");
    await waitFor("the retry to record the handle", () => (jobs().length === 1 ? true : undefined));
    endJob("succeeded");
    expect(await runEnded()).toBe("success");
    expect(submissions()).toHaveLength(1);
    expect(jobs()).toEqual([expect.objectContaining({ state: "succeeded", try_number: 2 })]);
  }, 60_000);

  it("`idem run` killed with -9 while it waits reattaches when run again", async () => {
    here.create({ "idem.config.ts": CONFIG, "remote.ts": REMOTE, "pipelines/remote.ts": PIPELINE(`"manual"`) });
    const first = startIdem(here.project, "run", "remote_load", "--date", "2026-09-01");
    await waitFor("the job to be submitted and its handle recorded", () => (jobs().length === 1 ? true : undefined));
    writeFileSync(join(here.project, "block-poll"), "");
    await waitFor("a poll to block", () => (existsSync(join(here.project, "blocked-poll")) ? true : undefined));
    await first.kill9();
    rmSync(join(here.project, "block-poll"));
    endJob("succeeded");
    const again = spawnSync(process.execPath, [join(repo, "bin/idem.js"), "run", "remote_load", "--date", "2026-09-01"], { cwd: here.project, encoding: "utf8", timeout: 30_000 });
    expect(again.status, again.stdout + again.stderr).toBe(0);
    expect(submissions()).toHaveLength(1);
    expect(jobs()).toEqual([expect.objectContaining({ state: "succeeded" })]);
    expect(attempts().filter((a) => a.state === "success")).toHaveLength(1);
  }, 60_000);
  it("a mapped external task holding its pool: one job per key, a worker killed with -9 reattaches each key, and the pool counts each job once", async () => {
    here.create({
      "idem.config.ts": `import { defineConfig } from "idem";\nexport default defineConfig({ workerLeaseMs: 1500, schedulerLeaseMs: 1500, concurrency: 4, pools: { cluster: 4 } });\n`,
      "remote.ts": REMOTE,
      "pipelines/regions.ts": `
import { pipeline, daily } from "idem";
import { remote } from "../remote.ts";
export const regions = pipeline("regions", { schedule: daily({ at: "00:00" }), timezone: "UTC", start: "2026-09-01", end: "2026-09-01" }, {
  list: { run: () => ({ regions: ["eu", "us", "ap"] }) },
  load: {
    after: ["list"], map: { items: { task: "list", field: "regions" } },
    external: remote, pollInterval: 200, pollBackoff: false, retries: 3, retryDelay: 0,
    pool: "cluster", slots: 2, holdPoolWhileRemote: true,
  },
});
`,
    });
    here.start("scheduler");
    const doomed = here.start("worker");
    await waitFor("two keys' jobs to fill the pool", () => (jobs().length === 2 ? true : undefined));
    writeFileSync(join(here.project, "block-poll"), "");
    await waitFor("a poll to block", () => (existsSync(join(here.project, "blocked-poll")) ? true : undefined));
    await doomed.kill9();
    rmSync(join(here.project, "block-poll"));
    here.start("worker");
    // Every attempt the kill lost is followed by a poll of its key's job on the next try: reattached.
    await waitFor("each lost key to reattach", () => {
      const lost = queryState<{ task_id: string; try_number: number }>(here.project, "SELECT task_id, try_number FROM attempts WHERE state = 'lost'");
      const polled = queryState<{ task_id: string; try_number: number }>(here.project, "SELECT task_id, try_number FROM attempts WHERE state = 'rescheduled'");
      return lost.length > 0 && lost.every((l) => polled.some((p) => p.task_id === l.task_id && p.try_number > l.try_number)) ? true : undefined;
    }, 30_000);
    const pools = JSON.parse(here.cli("pools", "--json").stdout) as { name: string; used: number; holders: { taskId: string; remote: boolean }[] }[];
    expect(pools[0]!.used).toBe(4);
    expect(submissions()).toHaveLength(2);
    const [first, second] = submissions();
    for (const key of [first!, second!]) writeFileSync(join(here.project, "jobs", key, "state"), "succeeded");
    await waitFor("the third key to take the freed slots", () => (submissions().length === 3 ? true : undefined), 30_000);
    writeFileSync(join(here.project, "jobs", submissions()[2]!, "state"), "succeeded");
    expect(await runEnded()).toBe("success");
    expect(new Set(submissions()).size).toBe(3);
    const byKey = queryState<{ task_id: string; state: string; n: number }>(here.project, "SELECT task_id, state, count(*) AS n FROM external_jobs GROUP BY task_id, state ORDER BY task_id");
    expect(byKey).toEqual([
      { task_id: "load[ap]", state: "succeeded", n: 1 }, { task_id: "load[eu]", state: "succeeded", n: 1 }, { task_id: "load[us]", state: "succeeded", n: 1 },
    ]);
    const successes = queryState<{ task_id: string }>(here.project, "SELECT task_id FROM attempts WHERE state = 'success' AND task_id LIKE 'load[%' ORDER BY task_id");
    expect(successes.map((s) => s.task_id)).toEqual(["load[ap]", "load[eu]", "load[us]"]);
    expect((JSON.parse(here.cli("pools", "--json").stdout) as { used: number }[])[0]!.used).toBe(0);
  }, 90_000);
});
