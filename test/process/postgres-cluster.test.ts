import { existsSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { makeProject, removeProject, startIdem, waitFor, type Daemon } from "../support/processes.ts";
import { CuttableRelay, dropSchema, freshSchema, queryPg, schemaUrl, testPostgresUrl } from "./postgres-support.ts";

const url = testPostgresUrl();

let project: string | null = null;
let schema: string | null = null;
const relays: CuttableRelay[] = [];
const daemons: Daemon[] = [];
afterEach(async () => {
  await Promise.all(daemons.splice(0).map((d) => d.stop()));
  await Promise.all(relays.splice(0).map((r) => r.close()));
  if (project) removeProject(project);
  if (schema) await dropSchema(url!, schema);
  project = schema = null;
});

function start(...args: string[]): Daemon {
  const daemon = startIdem(project!, ...args);
  daemons.push(daemon);
  return daemon;
}

/** Starts a process with the state store named by IDEM_STATE_URL rather than by the config. */
function startWithStateUrl(stateUrl: string, ...args: string[]): Daemon {
  const saved = process.env.IDEM_STATE_URL;
  process.env.IDEM_STATE_URL = stateUrl;
  try {
    return start(...args);
  } finally {
    if (saved === undefined) delete process.env.IDEM_STATE_URL;
    else process.env.IDEM_STATE_URL = saved;
  }
}

const q = <T = Record<string, any>>(sql: string, params: unknown[] = []) => queryPg<T>(url!, schema!, sql, params);

describe.skipIf(!url)("a cluster on PostgreSQL with real processes", () => {
  it("retries on the other worker what a worker killed with -9 was running, and every day succeeds once", async () => {
    schema = freshSchema();
    project = makeProject({
      "idem.config.ts": `import { defineConfig } from "idem";
export default defineConfig({ state: ${JSON.stringify(schemaUrl(url!, schema))}, workerLeaseMs: 1500, schedulerLeaseMs: 1500, concurrency: 4 });
`,
      "pipelines/catchup.ts": `
import { pipeline, daily } from "idem";
const pause = (ms) => new Promise((r) => setTimeout(r, ms));
export const catchup = pipeline("catchup", { schedule: daily({ at: "00:00" }), start: "2026-08-01", end: "2026-08-20", maxActiveRuns: 6 }, {
  extract: { retries: 2, retryDelay: 0, run: () => pause(200) },
  load: { after: ["extract"], retries: 2, retryDelay: 0, run: () => pause(200) },
});
`,
    });
    start("scheduler");
    const doomed = start("worker");
    const survivor = start("worker");
    const doomedPid = doomed.child.pid!;
    await waitFor("a few days done and the doomed worker busy", async () => {
      const [done] = await q<{ n: number }>("SELECT count(*)::int AS n FROM runs WHERE state = 'success'");
      const busy = await q("SELECT 1 FROM attempts WHERE state = 'running' AND pid = $1", [doomedPid]);
      return done!.n >= 3 && busy.length > 0 ? true : undefined;
    });
    await doomed.kill9();

    await waitFor("all 20 days to succeed", async () => {
      const [done] = await q<{ n: number }>("SELECT count(*)::int AS n FROM runs WHERE state = 'success'");
      return done!.n === 20 ? true : undefined;
    }, 60_000);

    const perDay = await q<{ n: number }>("SELECT count(*)::int AS n FROM runs GROUP BY business_date");
    expect(perDay).toHaveLength(20);
    expect(perDay.every((d) => d.n === 1)).toBe(true);
    const lost = await q<{ run_id: string; task_id: string; try_number: number; error_class: string }>(
      "SELECT run_id, task_id, try_number, error_class FROM attempts WHERE state = 'lost'",
    );
    expect(lost.length).toBeGreaterThan(0);
    expect(lost.every((a) => a.error_class === "LeaseExpired")).toBe(true);
    for (const a of lost) {
      const retried = await q<{ pid: number; try_number: number }>(
        "SELECT pid, try_number FROM attempts WHERE run_id = $1 AND task_id = $2 AND state = 'success'",
        [a.run_id, a.task_id],
      );
      expect(retried).toEqual([{ pid: survivor.child.pid, try_number: a.try_number + 1 }]);
    }
    const doubleSuccess = await q("SELECT 1 FROM attempts WHERE state = 'success' GROUP BY run_id, task_id HAVING count(*) > 1");
    expect(doubleSuccess).toEqual([]);
  });

  it("lets one of two schedulers lead, and the standby take over within the lease when the leader is killed", async () => {
    schema = freshSchema();
    const stateUrl = schemaUrl(url!, schema);
    project = makeProject({
      "idem.config.ts": `import { defineConfig } from "idem";
export default defineConfig({ workerLeaseMs: 1500, schedulerLeaseMs: 1500, concurrency: 8 });
`,
      "pipelines/hourly.ts": `
import { pipeline, hourly } from "idem";
export const hourlyJob = pipeline("hourly_job", { schedule: hourly({ timezone: "UTC" }), start: "2026-11-01T00:00:00Z", maxActiveRuns: 4 }, {
  t: { run: () => new Promise((r) => setTimeout(r, 20)) },
});
`,
    });
    const first = startWithStateUrl(stateUrl, "scheduler");
    await waitFor("the first to lead", async () => (/leads/.test(first.output()) ? true : undefined));
    const second = startWithStateUrl(stateUrl, "scheduler");
    startWithStateUrl(stateUrl, "worker");
    await waitFor("the second to stand by", async () => (/stands by/.test(second.output()) ? true : undefined));
    await waitFor("some runs", async () => ((await q("SELECT 1 FROM runs")).length >= 20 ? true : undefined));
    await first.kill9();
    const killedAt = Date.now();
    await waitFor("the standby to take over", async () => (/leads/.test(second.output()) ? true : undefined), 15_000);
    expect(Date.now() - killedAt).toBeLessThan(5_000);
    const runsAtTakeover = (await q("SELECT 1 FROM runs")).length;
    await waitFor("more runs", async () => ((await q("SELECT 1 FROM runs")).length > runsAtTakeover + 10 ? true : undefined));

    const twins = await q("SELECT interval_start FROM runs GROUP BY pipeline_id, interval_start HAVING count(*) > 1");
    expect(twins).toEqual([]);
    const [lease] = await q<{ term: number }>("SELECT term::int AS term FROM leases WHERE role = 'scheduler'");
    expect(lease!.term).toBe(2);
    // The state went to PostgreSQL, not to a SQLite file beside the project.
    expect(existsSync(`${project}/.idem/state.db`)).toBe(false);
  });

  it("rides out PostgreSQL being out of reach for a while: the processes carry on and expired leases are retried", async () => {
    schema = freshSchema();
    // Each process reaches PostgreSQL through a relay of its own. The worker is cut off longer
    // than its lease and longer than the scheduler: the scheduler, back first, finds the worker's
    // leases expired and retries those attempts, and the worker, back later, is refused.
    const [schedulerRelay, workerRelay] = [new CuttableRelay(url!), new CuttableRelay(url!)];
    relays.push(schedulerRelay, workerRelay);
    await Promise.all(relays.map((r) => r.open()));
    project = makeProject({
      "idem.config.ts": `import { defineConfig } from "idem";
export default defineConfig({ workerLeaseMs: 1500, schedulerLeaseMs: 1500, concurrency: 4 });
`,
      "pipelines/steady.ts": `
import { pipeline, daily } from "idem";
const pause = (ms) => new Promise((r) => setTimeout(r, ms));
export const steady = pipeline("steady", { schedule: daily({ at: "00:00" }), start: "2026-08-01", end: "2026-08-12", maxActiveRuns: 3 }, {
  work: { retries: 3, retryDelay: 0, run: () => pause(400) },
});
`,
    });
    const scheduler = startWithStateUrl(schemaUrl(schedulerRelay.url(url!), schema), "scheduler");
    const worker = startWithStateUrl(schemaUrl(workerRelay.url(url!), schema), "worker");
    await waitFor("a few days done and work running", async () => {
      const [done] = await q<{ n: number }>("SELECT count(*)::int AS n FROM runs WHERE state = 'success'");
      const busy = await q("SELECT 1 FROM attempts WHERE state = 'running'");
      return done!.n >= 2 && busy.length > 0 ? true : undefined;
    });
    await Promise.all([schedulerRelay.cut(), workerRelay.cut()]);
    await new Promise((r) => setTimeout(r, 1_000));
    await schedulerRelay.open();
    // The worker cannot record or renew anything now: what it was running stays "running" until reaped.
    await waitFor("the scheduler to find the cut-off worker's leases expired", async () => {
      const [counts] = await q<{ running: number; lost: number }>(
        "SELECT count(*) FILTER (WHERE state = 'running')::int AS running, count(*) FILTER (WHERE state = 'lost')::int AS lost FROM attempts");
      return counts!.running === 0 && counts!.lost > 0 ? true : undefined;
    });
    await workerRelay.open();

    await waitFor("all 12 days to succeed", async () => {
      const [done] = await q<{ n: number }>("SELECT count(*)::int AS n FROM runs WHERE state = 'success'");
      return done!.n === 12 ? true : undefined;
    }, 60_000);
    for (const daemon of [scheduler, worker]) expect(daemon.child.exitCode).toBeNull();
    const lost = await q<{ run_id: string }>("SELECT run_id FROM attempts WHERE state = 'lost'");
    expect(lost.length).toBeGreaterThan(0);
    const doubleSuccess = await q("SELECT 1 FROM attempts WHERE state = 'success' GROUP BY run_id, task_id HAVING count(*) > 1");
    expect(doubleSuccess).toEqual([]);
    expect(worker.output()).toMatch(/result refused|failed/);
  });
});
