import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { processHarness, queryState, waitFor } from "../support/processes.ts";

const harness = processHarness();
const { start, cli } = harness;

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("task code runs outside the worker's event loop", () => {
  it("times out a busy loop on time while another pipeline's task on the same worker finishes and keeps its lease", async () => {
    const project = harness.create({
      "idem.config.ts": `import { defineConfig } from "idem";
export default defineConfig({ workerLeaseMs: 1500, schedulerLeaseMs: 1500, concurrency: 2 });
`,
      "pipelines/spin.ts": `
import { writeFileSync } from "node:fs";
import { pipeline, daily } from "idem";
const here = new URL("..", import.meta.url).pathname;
export const spin = pipeline("spin", { schedule: daily({ at: "00:00" }), start: "2026-09-01", end: "2026-09-01" }, {
  loop: { timeout: "2s", killGrace: "500ms", run: () => { writeFileSync(here + "spin-started", String(Date.now())); for (;;) {} } },
});
`,
      "pipelines/steady.ts": `
import { existsSync, writeFileSync } from "node:fs";
import { pipeline, daily } from "idem";
const here = new URL("..", import.meta.url).pathname;
export const steady = pipeline("steady", { schedule: daily({ at: "00:00" }), start: "2026-09-01", end: "2026-09-01" }, {
  // Runs for more than two leases, and only while the busy loop spins beside it.
  wait: { run: async () => {
    while (!existsSync(here + "spin-started")) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 4_000));
    return { waited: true };
  } },
});
`,
    });
    start("scheduler");
    start("worker");
    const rows = await waitFor("both runs to end", () => {
      const runs = queryState<{ pipeline_id: string; state: string }>(project, "SELECT pipeline_id, state FROM runs ORDER BY pipeline_id");
      return runs.length === 2 && runs.every((r) => r.state === "success" || r.state === "failed") ? runs : undefined;
    }, 45_000);
    expect(rows).toEqual([{ pipeline_id: "spin", state: "failed" }, { pipeline_id: "steady", state: "success" }]);
    const attempts = queryState<{ task_id: string; state: string; error_class: string | null; error_message: string | null; started_at: number; ended_at: number }>(
      project, "SELECT task_id, state, error_class, error_message, started_at, ended_at FROM attempts ORDER BY task_id",
    );
    const loop = attempts.find((a) => a.task_id === "loop")!;
    expect(loop).toMatchObject({ state: "failed", error_class: "Timeout" });
    expect(loop.error_message).toMatch(/timed out after 2s; it did not stop within 500ms of its signal, so its process was killed/);
    // On time: the timeout and the grace, plus a little for a loaded machine (never the 4 s of the other task, or more).
    const spunFor = loop.ended_at - Number(readFileSync(join(project, "spin-started"), "utf8"));
    expect(spunFor).toBeGreaterThanOrEqual(2_000);
    expect(spunFor).toBeLessThan(4_000);
    // The other task ran its 4 s (more than two leases of 1.5 s) with one attempt: its lease was renewed all along.
    expect(attempts.filter((a) => a.task_id === "wait")).toEqual([expect.objectContaining({ state: "success", error_class: null })]);
    const wait = attempts.find((a) => a.task_id === "wait")!;
    expect(wait.ended_at - wait.started_at).toBeGreaterThan(4_000);
  });

  it("keeps the task context across the boundary and fails a crash of task code as a retryable TaskCrashed", async () => {
    const project = harness.create({
      "idem.config.ts": `import { defineConfig } from "idem";
export default defineConfig({ taskMemoryMb: 64, concurrency: 4 });
`,
      "pipelines/p.ts": `
import { pipeline, daily, DataError } from "idem";
export const p = pipeline("p", { schedule: daily({ at: "00:00" }), start: "2026-09-01", params: { greeting: "hi" } }, {
  context: { run: async (ctx) => {
    ctx.log.info(ctx.params.greeting + " " + ctx.businessDate + " try " + ctx.tryNumber);
    console.log("printed by task code");
    await ctx.watermarks.save("p", "context", 41);
    return { watermark: await ctx.watermarks.get("p", "context"), aborted: ctx.signal.aborted, zone: ctx.interval.start.timeZoneId };
  } },
  exits: { retries: 1, retryDelay: 0, run: (ctx) => { if (ctx.tryNumber === 1) process.exit(3); return { second: true }; } },
  throwsLater: { run: async () => { setTimeout(() => { throw new Error("thrown from a timer"); }, 10); await new Promise((r) => setTimeout(r, 5_000)); } },
  oom: { run: () => { const hoard: number[][] = []; for (;;) hoard.push(new Array(1e6).fill(1)); } },
  skips: { run: (ctx) => ctx.skip("nothing to do today") },
  badData: { run: () => { throw new DataError("3 rows without a key"); } },
});
`,
    });
    const run = cli("run", "p", "--date", "2026-09-01");
    expect(run.status).toBe(1);
    const tasks = queryState<{ task_id: string; state: string; try_number: number }>(project, "SELECT task_id, state, try_number FROM task_instances ORDER BY task_id");
    expect(Object.fromEntries(tasks.map((t) => [t.task_id, `${t.state} ${t.try_number}`]))).toEqual({
      badData: "failed 1", context: "success 1", exits: "success 2", oom: "failed 1", skips: "skipped 1", throwsLater: "failed 1",
    });
    const attempts = queryState<{ task_id: string; try_number: number; error_class: string | null; error_message: string | null; summary: string | null }>(
      project, "SELECT task_id, try_number, error_class, error_message, summary FROM attempts ORDER BY task_id, try_number",
    );
    const of = (task: string, tryNumber = 1) => attempts.find((a) => a.task_id === task && a.try_number === tryNumber)!;
    // `idem run` is a manual run: it reads its own interval and its save leaves the watermark to the schedule
    expect(JSON.parse(of("context").summary!)).toEqual({ watermark: null, aborted: false, zone: "UTC" });
    expect(of("exits")).toMatchObject({ error_class: "TaskCrashed", error_message: expect.stringMatching(/exited with code 3/) });
    expect(of("throwsLater")).toMatchObject({ error_class: "TaskCrashed", error_message: expect.stringMatching(/thrown from a timer/) });
    expect(of("oom")).toMatchObject({ error_class: "TaskCrashed", error_message: expect.stringMatching(/ran out of memory/) });
    expect(of("badData")).toMatchObject({ error_class: "DataError" });
    const log = cli("logs", "p@2026-09-01", "context").stdout;
    expect(log).toMatch(/INFO hi 2026-09-01 try 1/);
    expect(log).toMatch(/printed by task code/);
    expect(cli("tasks", "p@2026-09-01").stdout).toMatch(/skips\s+skipped.*nothing to do today/);
  });

  it("leaves no process of a command alive when its worker is killed with -9, and starts the retry after", async () => {
    const project = harness.create({
      "idem.config.ts": `import { defineConfig } from "idem";
export default defineConfig({ workerLeaseMs: 1500, schedulerLeaseMs: 1500 });
`,
      "pipelines/cmd.ts": `
import { pipeline, daily } from "idem";
export const cmdp = pipeline("cmdp", { schedule: daily({ at: "00:00" }), start: "2026-09-01", end: "2026-09-01" }, {
  long: {
    retries: 2, retryDelay: 0,
    command: ["bash", "-c", "echo \\"start try=$IDEM_TRY $(date +%s%3N) pgid=$(ps -o pgid= $$ | tr -d ' ')\\" >> events; if [ $IDEM_TRY = 1 ]; then sleep 60 & sleep 60; fi; echo \\"end try=$IDEM_TRY\\" >> events"],
  },
});
`,
    });
    start("scheduler");
    const doomed = start("worker");
    const events = () => (existsSync(join(project, "events")) ? readFileSync(join(project, "events"), "utf8") : "");
    const pgid = Number(await waitFor("the first try to start", () => /start try=1 \d+ pgid=(\d+)/.exec(events())?.[1]));
    expect(groupAlive(pgid)).toBe(true);
    await doomed.kill9();
    await waitFor("the attempt's process group to be gone", () => (groupAlive(pgid) ? undefined : true), 5_000);
    const goneAt = Date.now();
    start("worker");
    await waitFor("the retry to end", () => (/end try=2/.test(events()) ? true : undefined), 45_000);
    const lines = events().trim().split("\n");
    expect(lines.map((l) => l.replace(/ \d+ pgid=\d+$/, ""))).toEqual(["start try=1", "start try=2", "end try=2"]);
    const retryStartedAt = Number(/start try=2 (\d+)/.exec(events())![1]);
    expect(retryStartedAt).toBeGreaterThan(goneAt);
    // The command has ended; its worker records the end a moment later.
    await waitFor("the run to succeed", () => (queryState<{ state: string }>(project, "SELECT state FROM runs")[0]?.state === "success" ? true : undefined));
  });

  it("lets a killed idem run be run again at once on the same host, whatever workerLeaseMs says", async () => {
    const project = harness.create({
      "idem.config.ts": `import { defineConfig } from "idem";
export default defineConfig({ workerLeaseMs: 120000 });
`,
      "pipelines/slow.ts": `
import { existsSync, writeFileSync } from "node:fs";
import { pipeline, daily } from "idem";
const here = new URL("..", import.meta.url).pathname;
export const slow = pipeline("slow", { schedule: daily({ at: "00:00" }), start: "2026-09-01" }, {
  work: { run: async (ctx) => {
    writeFileSync(here + "started-" + ctx.tryNumber, "");
    if (ctx.tryNumber === 1) await new Promise((r) => setTimeout(r, 120_000));
  } },
});
`,
    });
    const doomed = start("run", "slow", "--date", "2026-09-01");
    await waitFor("the first try to start", () => (existsSync(join(project, "started-1")) ? true : undefined));
    const lease = queryState<{ lease_expires_at: number; started_at: number }>(project, "SELECT lease_expires_at, started_at FROM attempts")[0]!;
    expect(lease.lease_expires_at - lease.started_at).toBe(120_000); // idem run takes workerLeaseMs
    await doomed.kill9();
    const again = cli("run", "slow", "--date", "2026-09-01");
    expect(again.stderr).toBe("");
    expect(again.status).toBe(0);
    const attempts = queryState<{ try_number: number; state: string; error_class: string | null }>(project, "SELECT try_number, state, error_class FROM attempts ORDER BY attempt_id");
    expect(attempts).toEqual([
      { try_number: 1, state: "lost", error_class: "LeaseExpired" },
      { try_number: 2, state: "success", error_class: null },
    ]);
  });
});
