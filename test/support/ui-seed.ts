import type { ErrorClass } from "../../src/core/model/error-classes.ts";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { Clock } from "../../src/core/model/clock.ts";
import { runIdFor } from "../../src/core/model/run-id.ts";
import { pipeline } from "../../src/core/pipeline/define.ts";
import type { Pipeline } from "../../src/core/pipeline/types.ts";
import { addDays } from "../../src/core/time/dates.ts";
import { daily } from "../../src/core/time/index.ts";
import { Engine } from "../../src/engine/engine.ts";
import { taskInstancesOf, saveVersion } from "../../src/engine/records/pipeline-records.ts";
import type { ClaimedAttempt, Store } from "../../src/store/port.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";

/**
 * A year of a 10-task warehouse pipeline written straight into a real SQLite store through the
 * store's own claim and finish operations (so every state is one the engine can reach): daily
 * successes, failures (a data error that stops the run), retries that succeed on try 2, late
 * publications, one day the scheduler passed over (missing), a frozen month, and today's run
 * still running; the shop pipeline restates its last 3 days (so its newest dates were restated),
 * and a late publication raised an incident whose alerts were sent (one webhook failing). The UI
 * tests and the grid benchmark read it.
 */
export const SEED_NOW = Date.parse("2026-11-30T14:00:00Z");
export const WAREHOUSE = "warehouse_daily";
export const SHOP = "shop_orders";
export const FIRST_DATE = "2025-11-30";
export const LAST_DUE_DATE = "2026-11-29";
export const MISSING_DATE = "2026-10-14";
/** The shop's dates restated by its trailing window, and how often each: after each of the 3 days that followed it ran. */
export const RESTATED = { "2026-11-26": 3, "2026-11-27": 2, "2026-11-28": 1 } as const;
/** The late publication that raised an incident, and its alerts. */
export const LATE_INCIDENT = { key: "late:marts.daily_sales:2026-11-16", date: "2026-11-16", notify: ["ops_webhook", "log"], error: "webhook ops_webhook: HTTP 503" } as const;
export const FROZEN = { from: "2026-06-01", to: "2026-06-30", owner: "finance-controlling", reason: "June closed by finance (audited 2026-07-08)" };
export const WAREHOUSE_TASKS = [
  "extract_orders", "extract_customers", "extract_payments", "stage_orders", "stage_customers",
  "join_payments", "build_facts", "check_facts", "publish_marts", "export_report",
] as const;

/** Dates whose check_facts fails with a data error (never retried): downstream is upstream_failed. */
export function failsCheck(date: string): boolean {
  return dayIndex(date) % 37 === 21;
}
/** Dates whose extract_payments fails its first try and succeeds on the second. */
export function retriesPayments(date: string): boolean {
  return dayIndex(date) % 11 === 4;
}
/** Dates whose marts are published after the D+1 06:00 deadline. */
export function publishesLate(date: string): boolean {
  return dayIndex(date) % 23 === 9;
}

function dayIndex(date: string): number {
  return Math.round((Date.parse(`${date}T00:00:00Z`) - Date.parse(`${FIRST_DATE}T00:00:00Z`)) / 86_400_000);
}

export function seedPipelines(): Pipeline[] {
  const noop = () => ({});
  const warehouse = pipeline(
    WAREHOUSE,
    {
      schedule: daily({ at: "02:00", timezone: "Europe/London" }),
      start: FIRST_DATE,
      description: "Orders, customers and payments into the daily sales marts",
      owner: "data-platform",
      tags: ["warehouse", "finance"],
      frozen: [FROZEN],
      defaults: { retries: 2, retryDelay: "1m" },
      promises: [{ dataset: "marts.daily_sales", deadline: "D+1 06:00", slo: "D+1 04:00", owner: "finance-analytics" }],
    },
    {
      extract_orders: { run: noop, produces: ["raw.orders"] },
      extract_customers: { run: noop, produces: ["raw.customers"] },
      extract_payments: { run: noop, produces: ["raw.payments"], pool: "payments_api" },
      stage_orders: { after: ["extract_orders"], run: noop },
      stage_customers: { after: ["extract_customers"], run: noop },
      join_payments: { after: ["stage_orders", "extract_payments"], run: noop },
      build_facts: { after: ["join_payments", "stage_customers"], run: noop, pool: "warehouse", slots: 2 },
      check_facts: { after: ["build_facts"], run: noop, retries: 0 },
      publish_marts: { after: ["check_facts"], run: noop, publishes: "marts.daily_sales", produces: ["marts.daily_sales"] },
      export_report: { after: ["publish_marts"], command: ["bash", "-c", "echo report"] },
    },
  );
  const shop = pipeline(
    SHOP,
    { schedule: daily({ at: "02:00", timezone: "America/New_York" }), start: "2026-11-01", description: "The shop's order files into DuckDB", owner: "shop-team", restate: { last: 3 } },
    { load_day: { run: noop }, check_day: { after: ["load_day"], run: noop }, export: { after: ["check_day"], run: noop } },
  );
  return [warehouse, shop];
}

export interface Seeded {
  dir: string;
  store: Store;
  engine: Engine;
  clock: Clock & { set(ms: number): void };
  pipelines: Pipeline[];
  close(): Promise<void>;
}

/** Builds the seeded store in a fresh temporary folder; `close` removes it. */
export async function seedStore(options: { days?: number } = {}): Promise<Seeded> {
  const dir = mkdtempSync(join(tmpdir(), "idem-ui-"));
  const store = new SqliteStore(join(dir, "state.db"));
  await store.migrate();
  let now = SEED_NOW;
  const clock = { now: () => now, sleep: async () => {}, set: (ms: number) => void (now = ms) };
  const pipelines = seedPipelines();
  const engine = new Engine({ store, clock, stateDir: join(dir, ".idem"), pipelines, projectDir: dir });
  const [warehouse, shop] = pipelines as [Pipeline, Pipeline];
  await store.ensurePools([{ name: "warehouse", slots: 4 }, { name: "payments_api", slots: 2 }], SEED_NOW - 400 * 86_400_000);
  const firstDate = options.days ? addDays(LAST_DUE_DATE, -(options.days - 1)) : FIRST_DATE;
  for (let date = firstDate; date <= LAST_DUE_DATE; date = addDays(date, 1)) {
    if (date === MISSING_DATE) continue;
    await seedRun(store, dir, warehouse, date, date === LAST_DUE_DATE ? "running" : "done");
  }
  for (let date = "2026-11-01"; date <= LAST_DUE_DATE; date = addDays(date, 1)) {
    await seedRun(store, dir, shop, date, "done");
    for (const [restated, times] of Object.entries(RESTATED)) {
      const after = dayIndex(date) - dayIndex(restated);
      if (after >= 1 && after <= times) await seedRestatement(store, dir, shop, restated, date, after);
    }
  }
  await seedLateIncident(store);
  await store.heartbeatWorker({ workerId: "etl-1:4242", host: "etl-1", pid: 4242, concurrency: 8, at: SEED_NOW - 5_000 });
  await store.tryLead({ role: "scheduler", holder: "etl-1:4100", now: SEED_NOW - 3_000, ttlMs: 60_000 });
  await engine.pause(SHOP, { actor: "carol", note: "upstream file format change, waiting for the shop team" });
  await engine.unpause(SHOP, { actor: "carol", note: "format fixed" });
  await engine.setPool("payments_api", 2, { actor: "dave", description: "the payment provider allows two connections" });
  return {
    dir, store, engine, clock, pipelines,
    async close() {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

type Outcome = { outcome: "success" | "failed"; retryable: boolean; error?: [ErrorClass, string]; took: number; log: string[] };

async function seedRun(store: Store, dir: string, p: Pipeline, date: string, mode: "done" | "running"): Promise<void> {
  const interval = p.schedule.intervalForDate(date);
  const firesAt = p.schedule.firesAt(interval);
  await saveVersion(store, p, firesAt, "seed");
  const runId = runIdFor(p.id, interval);
  await store.createRunIfAbsent({
    runId, pipelineId: p.id, intervalStart: interval.start, intervalEnd: interval.end, businessDate: date, graphVersion: p.version,
    trigger: "schedule", triggeredBy: null, reason: null, params: {}, tasks: taskInstancesOf(p), createdAt: firesAt, cursor: interval.end,
  });
  await workRun(store, dir, p, date, runId, mode === "running" ? SEED_NOW - 12 * 60_000 : firesAt + 4_000 + (publishesLate(date) && p.id === WAREHOUSE ? 5 * 3_600_000 : 0), mode);
}

/** The schedule restating `date` after `head` ran, as the scheduler does: the run reset, audited, run again. */
async function seedRestatement(store: Store, dir: string, p: Pipeline, date: string, head: string, restatement: number): Promise<void> {
  const headInterval = p.schedule.intervalForDate(head);
  const headFires = p.schedule.firesAt(headInterval);
  const runId = runIdFor(p.id, p.schedule.intervalForDate(date));
  const at = headFires + 10 * 60_000;
  const reason = `restating the last ${p.restate!.last} interval(s) after ${head} ran`;
  await store.rerun({ runId, graphVersion: p.version, tasks: taskInstancesOf(p), params: {}, at, restate: { triggeredBy: "scheduler", reason, endedBefore: headFires } });
  await store.appendAudit({
    at, actor: "scheduler", action: "restate", pipelineId: p.id, runId, reason, graphVersion: p.version,
    details: { businessDate: date, after: head, restatement, tasks: "all" },
  });
  await workRun(store, dir, p, date, runId, at + 1_000, "done");
}

async function seedLateIncident(store: Store): Promise<void> {
  const deadlineAt = Date.parse(`${addDays(LATE_INCIDENT.date, 1)}T06:00:00Z`);
  await store.openIncident({
    key: LATE_INCIDENT.key, kind: "late", dataset: "marts.daily_sales", pipelineId: WAREHOUSE, businessDate: LATE_INCIDENT.date, runId: null,
    message: `marts.daily_sales for ${LATE_INCIDENT.date} is not published; its deadline was D+1 06:00 (Europe/London)`, notify: [...LATE_INCIDENT.notify], at: deadlineAt,
  });
  await store.resolveIncident(LATE_INCIDENT.key, deadlineAt + 3_600_000, "published at last");
  for (const alert of await store.dueAlerts(deadlineAt + 3_600_000, 10)) {
    if (alert.notifier === "log") await store.recordAlertDelivery(alert.id, { at: deadlineAt + 2_000 });
    else await store.recordAlertDelivery(alert.id, { at: deadlineAt + 2_000, error: LATE_INCIDENT.error, nextAttemptAt: SEED_NOW + 600_000 });
  }
}

async function workRun(store: Store, dir: string, p: Pipeline, date: string, runId: string, from: number, mode: "done" | "running"): Promise<void> {
  let t = from;
  for (let round = 0; round < 40; round++) {
    const claims = await store.claimReady({ workerId: "etl-1:4242", pid: 4242, limit: 10, now: t, leaseMs: 120_000, runId, logDir: join(dir, "logs") });
    if (claims.length === 0) {
      const retry = await store.nextRetryAt(runId);
      if (retry === null || (mode === "running" && retry > SEED_NOW)) return;
      t = retry;
      continue;
    }
    let latest = t;
    for (const claim of claims) {
      if (mode === "running" && claim.taskId === "extract_customers") {
        writeLog(claim, [`starting extract of customers for ${date}`, "reading page 1 of 12 from the CRM API"], t, 60_000);
        continue; // stays running: its worker still holds the lease
      }
      const o = outcomeOf(p, date, claim, mode);
      // Writing thousands of small files is most of the seeding time: old successes keep no log.
      if (o.outcome === "failed" || dayIndex(date) > dayIndex(LAST_DUE_DATE) - 45) writeLog(claim, o.log, t, o.took);
      const end = t + o.took;
      latest = Math.max(latest, end);
      await store.finishAttempt({
        attemptId: claim.attemptId, workerId: "etl-1:4242", now: end, outcome: o.outcome,
        datasets: o.outcome === "success" ? p.tasks.get(claim.taskId)!.produces : [],
        publishes: o.outcome === "success" && p.tasks.get(claim.taskId)!.publishes ? [{ dataset: p.tasks.get(claim.taskId)!.publishes!, emptyReason: null }] : [],
        retryable: o.retryable, retryAt: o.outcome === "failed" && o.retryable ? (mode === "running" ? SEED_NOW + 10 * 60_000 : end + 60_000) : null,
        exitCode: o.outcome === "success" ? 0 : 1, errorClass: o.error?.[0] ?? null, errorMessage: o.error?.[1] ?? null,
        summary: o.outcome === "success" ? JSON.stringify({ rows: 1000 + (dayIndex(date) * 37 + claim.taskId.length * 11) % 9000 }) : null, skipReason: null,
      });
    }
    t = latest + 1_000;
  }
}

function outcomeOf(p: Pipeline, date: string, claim: ClaimedAttempt, mode: "done" | "running"): Outcome {
  const took = 20_000 + ((dayIndex(date) * 7919 + claim.taskId.length * 104_729) % 100_000);
  const ok = (lines: string[]): Outcome => ({ outcome: "success", retryable: true, took, log: lines });
  if (p.id !== WAREHOUSE) return ok([`${claim.taskId} for ${date}: done`]);
  if (claim.taskId === "extract_payments" && (retriesPayments(date) || mode === "running") && claim.tryNumber === 1) {
    return { outcome: "failed", retryable: true, took: 8_000, error: ["TaskFailed", "FetchError: payments API answered 503 Service Unavailable"], log: [`fetching payments for ${date}`, "GET /v2/payments?date=" + date, "payments API answered 503 Service Unavailable; giving up this try"] };
  }
  if (claim.taskId === "check_facts" && failsCheck(date)) {
    return {
      outcome: "failed", retryable: false, took: 6_000,
      error: ["DataError", `${date}: fact_sales has 1204 rows but the source orders sum to 1198 (6 duplicates)`],
      log: [`checking fact_sales for ${date}`, "rows in fact_sales: 1204", "orders in source: 1198", `DataError: ${date}: fact_sales has 1204 rows but the source orders sum to 1198 (6 duplicates)`],
    };
  }
  return ok([`${claim.taskId} for ${date} (try ${claim.tryNumber})`, "connected to the warehouse", `wrote ${1000 + dayIndex(date)} rows`, "done"]);
}

function writeLog(claim: ClaimedAttempt, lines: readonly string[], start: number, took: number): void {
  mkdirSync(dirname(claim.logPath), { recursive: true });
  const step = took / Math.max(1, lines.length);
  writeFileSync(claim.logPath, lines.map((l, i) => `${new Date(start + i * step).toISOString()} ${l}`).join("\n") + "\n");
}
