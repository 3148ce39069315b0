import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { makeProject, processHarness, queryState, repo, waitFor } from "../support/processes.ts";


const here = processHarness();
const start = here.start;

const CONFIG = `import { defineConfig } from "idem";
export default defineConfig({ workerLeaseMs: 1500, schedulerLeaseMs: 1500, concurrency: 8 });
`;

describe("crash recovery with real processes", () => {
  it("retries the task of a worker killed with -9, and it completes once", async () => {
    here.project = makeProject({
      "idem.config.ts": CONFIG,
      "pipelines/slow.ts": `
import { appendFileSync, writeFileSync } from "node:fs";
import { pipeline, daily } from "idem";
const here = new URL("..", import.meta.url).pathname;
export const slow = pipeline("slow", { schedule: daily({ at: "00:00" }), start: "2026-09-01", end: "2026-09-01" }, {
  work: {
    retries: 2, retryDelay: 0,
    run: async (ctx) => {
      writeFileSync(here + "started-" + ctx.tryNumber, String(process.pid));
      if (ctx.tryNumber === 1) await new Promise((r) => setTimeout(r, 60_000));
      appendFileSync(here + "completed", ctx.businessDate + " try " + ctx.tryNumber + "\\n");
    },
  },
});
`,
    });
    start("scheduler");
    const doomed = start("worker");
    await waitFor("the first try to start", () => (existsSync(join(here.project, "started-1")) ? true : undefined));
    await doomed.kill9();
    start("worker");
    const runState = await waitFor("the run to finish", () => {
      const [run] = queryState<{ state: string }>(here.project, "SELECT state FROM runs");
      return run && (run.state === "success" || run.state === "failed") ? run.state : undefined;
    }, 45_000);
    expect(runState).toBe("success");
    expect(readFileSync(join(here.project, "completed"), "utf8")).toBe("2026-09-01 try 2\n");
    const attempts = queryState<{ try_number: number; state: string; error_class: string | null }>(
      here.project, "SELECT try_number, state, error_class FROM attempts ORDER BY attempt_id",
    );
    expect(attempts).toEqual([
      { try_number: 1, state: "lost", error_class: "LeaseExpired" },
      { try_number: 2, state: "success", error_class: null },
    ]);
  });

  it("on SIGTERM stops claiming, lets attempts finish within the grace period, then hands the rest back", async () => {
    here.project = makeProject({
      "idem.config.ts": CONFIG,
      "pipelines/mixed.ts": `
import { appendFileSync, existsSync, writeFileSync } from "node:fs";
import { pipeline, daily } from "idem";
const here = new URL("..", import.meta.url).pathname;
export const mixed = pipeline("mixed", { schedule: daily({ at: "00:00" }), start: "2026-09-01", end: "2026-09-01" }, {
  quick: { run: async () => { writeFileSync(here + "quick-started", ""); await new Promise((r) => setTimeout(r, 300)); } },
  slow: {
    run: async (ctx) => {
      writeFileSync(here + "slow-started-" + ctx.tryNumber, "");
      if (!existsSync(here + "release")) await new Promise((r) => setTimeout(r, 60_000));
      appendFileSync(here + "slow-done", "try " + ctx.tryNumber + "\\n");
    },
  },
});
`,
    });
    start("scheduler");
    const first = start("worker", "--grace", "1");
    await waitFor("both tasks to start", () => (existsSync(join(here.project, "quick-started")) && existsSync(join(here.project, "slow-started-1")) ? true : undefined));
    first.child.kill("SIGTERM");
    await new Promise<void>((r) => first.child.once("close", () => r()));
    expect(first.output()).toMatch(/handing back 1 attempt/);
    const rows = queryState<{ task_id: string; state: string; error_class: string | null }>(
      here.project, "SELECT task_id, state, error_class FROM attempts ORDER BY task_id",
    );
    expect(rows).toEqual([
      { task_id: "quick", state: "success", error_class: null },
      { task_id: "slow", state: "rescheduled", error_class: "Cancelled" },
    ]);
    writeFileSync(join(here.project, "release"), "");
    start("worker");
    // The file exists a moment before its line is in it: wait for the line.
    const done = await waitFor("the handed-back task to finish", () => (existsSync(join(here.project, "slow-done")) ? readFileSync(join(here.project, "slow-done"), "utf8") || undefined : undefined));
    // handed back, not failed: the same try ran again
    expect(done).toBe("try 1\n");
    const [run] = queryState<{ state: string }>(here.project, "SELECT state FROM runs");
    await waitFor("the run to succeed", () => (queryState<{ state: string }>(here.project, "SELECT state FROM runs")[0]?.state === "success" ? true : undefined));
    expect(run).toBeDefined();
  });

  it("resumes a catch-up after the scheduler is killed with -9: no duplicate run, no missed interval", async () => {
    here.project = makeProject({
      "idem.config.ts": CONFIG,
      "pipelines/year.ts": `
import { pipeline, daily } from "idem";
export const year = pipeline("year", { schedule: daily({ at: "00:00" }), start: "2025-01-01", end: "2025-12-31", maxActiveRuns: 8 }, {
  a: { run: () => {} },
  b: { after: ["a"], run: () => {} },
});
`,
    });
    start("worker", "--concurrency", "8");
    const doomed = start("scheduler");
    await waitFor("some runs", () => (queryState(here.project, "SELECT 1 FROM runs WHERE state = 'success'").length >= 40 ? true : undefined));
    await doomed.kill9();
    const before = queryState(here.project, "SELECT 1 FROM runs").length;
    expect(before).toBeLessThan(365);
    start("scheduler");
    await waitFor("all 365 runs to succeed", () =>
      queryState(here.project, "SELECT 1 FROM runs WHERE state = 'success'").length === 365 ? true : undefined,
      60_000,
    );
    const perDay = queryState<{ n: number }>(here.project, "SELECT count(*) AS n FROM runs GROUP BY business_date");
    expect(perDay.length).toBe(365);
    expect(perDay.every((d) => d.n === 1)).toBe(true);
    const doubleRunning = queryState(here.project, "SELECT run_id, task_id FROM attempts WHERE state = 'running' GROUP BY run_id, task_id HAVING count(*) > 1");
    expect(doubleRunning).toEqual([]);
  });

  it("continues a backfill after its scheduler is killed with -9, with no duplicate and no gap", async () => {
    here.project = makeProject({
      "idem.config.ts": CONFIG,
      "pipelines/sales.ts": `
import { pipeline, daily } from "idem";
export const sales = pipeline("sales", { schedule: daily({ at: "02:00", timezone: "Europe/London" }), start: "2025-01-01" }, {
  load: { run: async () => { await new Promise((r) => setTimeout(r, 5)); } },
  report: { after: ["load"], run: () => {} },
});
`,
    });
    const cli = (...args: string[]) => spawnSync(process.execPath, [join(repo, "bin/idem.js"), ...args], { cwd: here.project, encoding: "utf8" });
    expect(cli("pause", "sales", "--note", "backfill only").status).toBe(0);
    const created = cli("backfill", "sales", "--from", "2025-01-01", "--to", "2025-06-30", "--reason", "rebuild H1", "--max-active-runs", "4", "--no-follow");
    expect(created.status).toBe(0);
    const backfillId = /backfill (bf_[0-9a-f]+) created/.exec(created.stdout)![1]!;
    start("worker", "--concurrency", "8");
    const doomed = start("scheduler");
    await waitFor("a third of the backfill", () => (queryState(here.project, "SELECT 1 FROM runs WHERE state = 'success'").length >= 60 ? true : undefined));
    await doomed.kill9();
    start("scheduler");
    await waitFor("the backfill to complete", () => {
      const [row] = queryState<{ state: string }>(here.project, "SELECT state FROM backfills WHERE backfill_id = ?", backfillId);
      return row?.state === "completed" ? true : undefined;
    }, 60_000);
    const runs = queryState<{ business_date: string; n: number }>(here.project, "SELECT business_date, count(*) AS n FROM runs GROUP BY business_date ORDER BY 1");
    expect(runs).toHaveLength(181);
    expect(runs.every((r) => r.n === 1)).toBe(true);
    const listed = cli("backfills", "--json");
    expect(JSON.parse(listed.stdout)[0]).toMatchObject({ backfillId, state: "completed", progress: { planned: 181, succeeded: 181 } });
  });

  it("lets one of two schedulers lead, and the other take over when the leader is killed", async () => {
    here.project = makeProject({
      "idem.config.ts": CONFIG,
      "pipelines/hourly.ts": `
import { pipeline, hourly } from "idem";
export const hourlyJob = pipeline("hourly_job", { schedule: hourly({ timezone: "UTC" }), start: "2026-11-01T00:00:00Z", maxActiveRuns: 4 }, {
  t: { run: () => {} },
});
`,
    });
    const first = start("scheduler");
    await waitFor("the first to lead", () => (/leads/.test(first.output()) ? true : undefined));
    const second = start("scheduler");
    start("worker", "--concurrency", "8");
    await waitFor("the second to stand by", () => (/stands by/.test(second.output()) ? true : undefined));
    await waitFor("some runs", () => (queryState(here.project, "SELECT 1 FROM runs").length >= 20 ? true : undefined));
    await first.kill9();
    const killedAt = Date.now();
    await waitFor("the standby to take over", () => (/leads/.test(second.output()) ? true : undefined), 15_000);
    expect(Date.now() - killedAt).toBeLessThan(10_000);
    const runsAtTakeover = queryState(here.project, "SELECT 1 FROM runs").length;
    await waitFor("more runs", () => (queryState(here.project, "SELECT 1 FROM runs").length > runsAtTakeover + 10 ? true : undefined));
    const twins = queryState(here.project, "SELECT interval_start FROM runs GROUP BY pipeline_id, interval_start HAVING count(*) > 1");
    expect(twins).toEqual([]);
    const [lease] = queryState<{ term: number }>(here.project, "SELECT term FROM leases WHERE role = 'scheduler'");
    expect(lease!.term).toBe(2);
  });
});
