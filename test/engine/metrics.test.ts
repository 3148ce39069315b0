import { afterEach, describe, expect, it } from "vitest";
import { pipeline } from "../../src/core/pipeline/define.ts";
import { daily, manual } from "../../src/core/time/index.ts";
import { ScheduleHarness } from "../support/scheduling.ts";

let h: ScheduleHarness;
afterEach(async () => {
  await h?.close();
});

const state = { fail: false };

const shop = pipeline(
  "shop_orders",
  {
    schedule: daily({ at: "02:00", timezone: "Europe/London" }),
    start: "2026-09-01",
    promises: [{ dataset: "orders_daily", deadline: "D+1 06:00", slo: "D+1 05:30", owner: "finance-data" }],
  },
  {
    load: {
      run: () => {
        if (state.fail) throw new Error("the till's file is late");
      },
    },
    publish: { after: ["load"], publishes: "orders_daily", run: () => ({ orders: 3 }) },
  },
);

/** Manual only: its runs wait in the queue of pool "db" until a worker takes them. */
const stock = pipeline("stock", { schedule: manual({ timezone: "UTC" }) }, {
  count: { pool: "db", run: () => undefined },
  report: { after: ["count"], run: () => undefined },
});

/**
 * shop_orders ran 2026-09-01 on time and failed 2026-09-02; at 2026-09-04 12:00 UTC nothing of
 * 09-02 or 09-03 is published (both past their deadline, D+1 06:00 London = 05:00 UTC), a
 * stock run waits in pool "db" since 90 s, a did_not_run incident is open and a backfill of
 * three days has started nothing yet.
 */
async function seeded(): Promise<void> {
  state.fail = false;
  h = await ScheduleHarness.open([shop, stock], "2026-09-01T00:00:00Z");
  await h.store.setPool({ name: "db", slots: 2, at: h.clock.now() });
  await h.at("2026-09-02T03:00:00Z");
  state.fail = true;
  await h.at("2026-09-03T03:00:00Z");
  h.clock.set("2026-09-04T11:58:30Z");
  await h.engine.trigger("stock", "2026-09-03", { actor: "tester" });
  await h.engine.backfill("shop_orders", { from: "2026-09-01", to: "2026-09-03", reprocess: "all", reason: "test", actor: "tester" });
  await h.store.openIncident({ key: "did_not_run:stock:2026-09-02", kind: "did_not_run", dataset: null, pipelineId: "stock", businessDate: "2026-09-02", runId: null, message: "did not run", notify: [], at: h.clock.now() });
  // one a person has taken for good, one snoozed past the scrape, one whose snooze ended before it
  for (const [date, until] of [["2026-08-30", null], ["2026-08-31", Date.parse("2026-09-04T13:00:00Z")], ["2026-09-01", Date.parse("2026-09-04T11:59:00Z")]] as const) {
    const key = `did_not_run:stock:${date}`;
    await h.store.openIncident({ key, kind: "did_not_run", dataset: null, pipelineId: "stock", businessDate: date, runId: null, message: "did not run", notify: [], at: h.clock.now() });
    await h.store.actOnIncident({ kind: "acknowledge", key, actor: "ana", reason: "on it", until, at: h.clock.now() });
  }
  h.clock.set("2026-09-04T12:00:00Z");
}

describe("the store's facts a scrape reads", () => {
  it("counts live and recent runs, queues, promises, incidents, backfills and leases from the store", async () => {
    await seeded();
    const facts = await h.engine.storeFacts();
    const count = <L>(rows: { labels: L; count: number }[], labels: Partial<L>) =>
      rows.filter((r) => Object.entries(labels).every(([k, v]) => (r.labels as Record<string, unknown>)[k] === v)).reduce((n, r) => n + r.count, 0);

    expect(count(facts.liveRuns, { pipeline: "stock", state: "queued" })).toBe(1);
    expect(count(facts.liveRuns, { pipeline: "shop_orders" })).toBe(0);
    // zeros for every pipeline and live state, so an alert's expression always has a series
    expect(facts.liveRuns.map((r) => `${r.labels.pipeline} ${r.labels.state}`).sort()).toEqual(["shop_orders queued", "shop_orders running", "stock queued", "stock running"]);
    expect(count(facts.recentRuns, { pipeline: "shop_orders", state: "success" })).toBe(1);
    expect(count(facts.recentRuns, { pipeline: "shop_orders", state: "failed" })).toBe(1);
    expect(count(facts.taskInstances, { pipeline: "stock", task: "count", state: "queued" })).toBe(1);
    expect(count(facts.taskInstances, { pipeline: "stock", task: "report", state: "scheduled" })).toBe(1);
    expect(count(facts.taskInstances, { pipeline: "shop_orders" })).toBe(0);

    expect(facts.queues.find((q) => q.pool === "db")).toEqual({ pool: "db", queued: 1, oldestAgeSeconds: 90 });
    expect(facts.queues.find((q) => q.pool === "(none)")).toEqual({ pool: "(none)", queued: 0, oldestAgeSeconds: 0 });
    expect(facts.pools).toEqual([{ pool: "db", slots: 2, used: 0 }]);

    const [promise] = facts.promises;
    expect(promise).toMatchObject({ pipeline: "shop_orders", dataset: "orders_daily", unpublished: 2, days: { on_time: 1, late: 0, missed: 2, not_yet_due: 1 } });
    // 09-02's deadline (09-03 05:00 UTC) passed 31 hours ago
    expect(promise!.lagSeconds).toBe(31 * 3600);

    expect(count(facts.openIncidents, { kind: "did_not_run", pipeline: "stock", state: "open" })).toBe(2);
    expect(count(facts.openIncidents, { kind: "did_not_run", pipeline: "stock", state: "acknowledged" })).toBe(2);
    expect(count(facts.openIncidents, { kind: "late" })).toBe(0);
    expect(count(facts.backfills, { pipeline: "shop_orders", state: "running" })).toBe(1);
    expect(count(facts.backfillRuns, { pipeline: "shop_orders", state: "planned" })).toBe(3);
    expect(count(facts.backfillRuns, { pipeline: "shop_orders", state: "not_started" })).toBe(3);

    const scheduler = facts.leases.find((l) => l.role === "scheduler");
    expect(scheduler).toEqual({ role: "scheduler", ageSeconds: (Date.parse("2026-09-04T12:00:00Z") - Date.parse("2026-09-03T03:00:00Z")) / 1000, current: false });
    expect(facts.leases.find((l) => l.role === "checker")).toBeUndefined();
  });

  it("a run whose worker died counts as what the store says it is, with no process left to say so", async () => {
    await seeded();
    // The queued stock run is claimed by a worker that is never heard of again: it is running.
    const [claimed] = await h.store.claimReady({ workerId: "gone", pid: 1, limit: 1, now: h.clock.now(), leaseMs: 30_000, logDir: "/logs" });
    expect(claimed?.taskId).toBe("count");
    let facts = await h.engine.storeFacts();
    expect(facts.liveRuns.find((r) => r.labels.pipeline === "stock" && r.labels.state === "running")?.count).toBe(1);
    expect(facts.pools).toEqual([{ pool: "db", slots: 2, used: 1 }]);
    // Its lease runs out; the scheduler turns the attempt lost (no retries: the run fails).
    h.clock.set("2026-09-04T12:01:00Z");
    await h.scheduler.tick();
    facts = await h.engine.storeFacts();
    expect(facts.recentRuns.find((r) => r.labels.pipeline === "stock" && r.labels.state === "failed")?.count).toBe(1);
    expect(facts.pools).toEqual([{ pool: "db", slots: 2, used: 0 }]);
  });
});

describe("/metrics' text", () => {
  it("shows the store's facts with bounded labels, and what the process measured", async () => {
    await seeded();
    const metrics = await h.engine.metrics();
    const attempt = { pipelineId: "stock", taskId: "count", mapKey: null, runId: "r1", businessDate: "2024-01-01", tryNumber: 1, workerId: "w1" };
    h.engine.events.emit("attempt:claimed", { ...attempt, claimedAt: 40_000, queueWaitMs: 40_000 });
    h.engine.events.emit("attempt:finished", {
      ...attempt, taskState: "success", runState: null, startedAt: 0, endedAt: 2_500, outcome: "success", errorClass: null, errorMessage: null, durationMs: 2_500,
    });
    h.engine.events.emit("worker:claimed", { workerId: "w1", wanted: 10, claimed: 3, finishes: 2, durationMs: 7 });
    h.engine.events.emit("scheduler:tick", { holder: "s1", leader: true, durationMs: 4, lagMs: 1_500, runsCreated: 0, attemptsLost: 0 });
    const { contentType, text } = await metrics.scrape();
    expect(contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    const lines = text.split("\n");
    for (const line of [
      "idem_store_up 1",
      'idem_runs{pipeline="stock",state="queued"} 1',
      'idem_runs_recent{pipeline="shop_orders",state="failed"} 1',
      'idem_task_instances{pipeline="stock",task="count",state="queued"} 1',
      'idem_queued_task_instances{pool="db"} 1',
      'idem_queued_oldest_age_seconds{pool="db"} 90',
      'idem_pool_slots{pool="db"} 2',
      'idem_promise_freshness_lag_seconds{pipeline="shop_orders",dataset="orders_daily"} 111600',
      'idem_promise_unpublished_business_dates{pipeline="shop_orders",dataset="orders_daily"} 2',
      'idem_promise_business_dates{pipeline="shop_orders",dataset="orders_daily",status="missed"} 2',
      'idem_incidents_open{kind="did_not_run",pipeline="stock",state="open"} 2',
      'idem_incidents_open{kind="did_not_run",pipeline="stock",state="acknowledged"} 2',
      'idem_backfill_runs{pipeline="shop_orders",state="planned"} 3',
      'idem_lease_current{role="scheduler"} 0',
      'idem_attempt_duration_seconds_count{pipeline="stock",task="count",state="success"} 1',
      'idem_attempt_duration_seconds_sum{pipeline="stock",task="count",state="success"} 2.5',
      'idem_queue_wait_seconds_bucket{le="15",pipeline="stock",task="count"} 0',
      'idem_queue_wait_seconds_bucket{le="60",pipeline="stock",task="count"} 1',
      'idem_claim_duration_seconds_bucket{le="0.005",with_results="true"} 0',
      'idem_claim_duration_seconds_bucket{le="0.01",with_results="true"} 1',
      'idem_claim_duration_seconds_count{with_results="true"} 1',
      'idem_scheduler_tick_duration_seconds_count{leader="true"} 1',
      'idem_scheduler_tick_lag_seconds_bucket{le="1",leader="true"} 0',
      'idem_scheduler_tick_lag_seconds_bucket{le="2.5",leader="true"} 1',
      "idem_task_hosts 0",
    ]) expect(lines, line).toContain(line);
    // No label names a run or a business date.
    expect(text).not.toMatch(/@2026|2026-09-0\d/);
    metrics.close();
  });

  it("still answers when the store does not, saying so", async () => {
    await seeded();
    const metrics = await h.engine.metrics();
    await h.store.close();
    const { text } = await metrics.scrape();
    expect(text.split("\n")).toContain("idem_store_up 0");
    expect(text).not.toMatch(/^idem_runs\{/m);
    metrics.close();
  });
});
