import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { makeProject, processHarness, queryState, repo, waitFor } from "../support/processes.ts";

const here = processHarness();
const start = here.start;

function idem(...args: string[]) {
  const r = spawnSync(process.execPath, [join(repo, "bin/idem.js"), ...args], { cwd: here.project, encoding: "utf8", env: { ...process.env, NO_COLOR: "1" }, timeout: 30_000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

// Short leases and grace so that an outage of a few seconds is one (long enough that a loaded machine is not one).
const CONFIG = `import { defineConfig } from "idem";
export default defineConfig({ schedulerLeaseMs: 3000, workerLeaseMs: 3000, checkerIntervalMs: 300, checkerStaleMs: 5000, didNotRunGraceMs: 8000, concurrency: 4 });
`;

type IncidentRow = { incident_key: string; kind: string; opened_at: number; resolved_at: number | null; message: string; resolution: string | null };
const incidents = () => queryState<IncidentRow>(here.project, "SELECT incident_key, kind, opened_at, resolved_at, message, resolution FROM incidents ORDER BY opened_at");
const leadOf = (role: string) => queryState<{ holder: string; expires_at: number }>(here.project, "SELECT holder, expires_at FROM leases WHERE role = ?", role)[0];

describe("the watchdog with real processes", () => {
  it("raises exactly one incident for a scheduler killed past due times, from a worker's watchdog, and resolves it when a scheduler returns", async () => {
    here.project = makeProject({
      "idem.config.ts": CONFIG,
      "pipelines/ticks.ts": `
import { pipeline, cron } from "idem";
export const ticks = pipeline("ticks", { schedule: cron("*/3 * * * * *") }, { t: { run: () => ({ ok: 1 }) } });
`,
    });
    const scheduler = start("scheduler");
    await waitFor("the scheduler to lead and check", () => (leadOf("scheduler") && leadOf("checker")?.holder.startsWith("scheduler ") ? true : undefined), 30_000);
    const worker = start("worker");
    await waitFor("a first run to succeed", () => queryState(here.project, "SELECT 1 FROM runs WHERE state = 'success'")[0], 30_000);
    expect(incidents()).toEqual([]);
    const killedAt = Date.now();
    await scheduler.kill9(); // its watchdog dies with it: the worker's takes the checker lease
    const down = await waitFor("the scheduler_down incident", () => incidents().find((i) => i.kind === "scheduler_down"), 20_000);
    // A grace (8 s) after the scheduler last renewed its lead, no sooner (the key names that time).
    expect(down.opened_at - Number(down.incident_key.split(":")[1])).toBeGreaterThanOrEqual(8_000);
    expect(down.opened_at).toBeGreaterThan(killedAt);
    expect(down.message).toMatch(/^scheduler down: no scheduler has held the lead since \d{4}-\d\d-\d\d \d\d:\d\d(:\d\d)? UTC \(last: [^)]+\); no scheduled run is created and no backfill advances$/);
    expect(leadOf("checker")!.holder).toMatch(/^worker /);
    // Let due times pass while it is down: still one incident, and health says so.
    const dueTimes = queryState<{ n: number }>(here.project, "SELECT count(*) AS n FROM runs")[0]!.n;
    await new Promise((r) => setTimeout(r, 8_500));
    expect(incidents().map((i) => i.kind)).toEqual(["scheduler_down"]);
    const health = idem("health");
    expect(health.code).toBe(1);
    expect(health.out).toMatch(/^SCHEDULER DOWN: checker run by worker \S+, last pass \d+s ago; no scheduler has held the lead since/);
    expect(queryState<{ n: number }>(here.project, "SELECT count(*) AS n FROM runs")[0]!.n).toBe(dueTimes); // nothing created meanwhile

    start("scheduler");
    const resolved = await waitFor("the incident to resolve", () => incidents().find((i) => i.kind === "scheduler_down" && i.resolved_at !== null), 20_000);
    expect(resolved.resolution).toMatch(/^scheduler \S+ leads again$/);
    await waitFor("the missed intervals to be caught up", () => (queryState<{ n: number }>(here.project, "SELECT count(*) AS n FROM runs")[0]!.n >= dueTimes + 2 ? true : undefined), 20_000);
    await new Promise((r) => setTimeout(r, 8_500)); // past the grace once more: the late runs open nothing
    expect(incidents().map((i) => [i.kind, i.resolved_at === null ? "open" : "resolved", i.message])).toEqual([["scheduler_down", "resolved", down.message]]);
    // The alert went out (and its resolution) through the watchdog, not the dead scheduler.
    await waitFor("the resolve alert", () => (/ALERT RESOLVED scheduler_down:/.test(worker.output()) ? true : undefined), 10_000);
    expect(worker.output()).toMatch(/ALERT OPEN scheduler_down:/);
    expect(idem("health").code).toBe(0);
  }, 120_000);

  it("opens no incident during a 60-day catch-up under a cap of 3", async () => {
    const first = new Date(Date.now() - 60 * 86_400_000).toISOString().slice(0, 10);
    here.project = makeProject({
      "idem.config.ts": CONFIG,
      "pipelines/history.ts": `
import { pipeline, daily } from "idem";
export const history = pipeline("history", { schedule: daily({ at: "00:00" }), start: "${first}", maxActiveRuns: 3 }, {
  load: { run: async () => { await new Promise((r) => setTimeout(r, 400)); return { rows: 1 }; } },
  publish: { after: ["load"], run: () => ({ ok: 1 }) },
});
`,
    });
    start("scheduler");
    await waitFor("the scheduler to lead", () => leadOf("scheduler"), 30_000);
    start("worker");
    const seen = new Set<string>();
    await waitFor("60 runs to succeed", () => {
      const n = queryState<{ n: number }>(here.project, "SELECT count(*) AS n FROM runs WHERE state = 'success'")[0]!.n;
      if (n >= 3 && seen.size === 0) {
        const ledger = JSON.parse(idem("expected", "history", "--limit", "60", "--json").out) as { status: string; cause: string | null }[];
        for (const e of ledger) if (e.cause) seen.add(`${e.status} ${e.cause}`);
      }
      return n >= 60 ? n : undefined;
    }, 90_000);
    expect(queryState<{ n: number }>(here.project, "SELECT count(*) AS n FROM runs")[0]!.n).toBe(60);
    await new Promise((r) => setTimeout(r, 8_500)); // one grace more, with the watchdog passing every 300 ms
    expect(incidents()).toEqual([]);
    // While catching up the newest days were pending (under the cap, or in order), never missing.
    expect([...seen].every((s) => s.startsWith("pending "))).toBe(true);
    expect(seen.size).toBeGreaterThan(0);
    expect(idem("health").code).toBe(0);
  }, 150_000);
});
