import { ErrorClass } from "../../src/core/model/error-classes.ts";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it, vi } from "vitest";
import { MIGRATIONS } from "../../src/store/sqlite/migrations.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { SQL } from "../../src/store/sqlite/sql.ts";
import { describeStoreContract } from "./store-contract.ts";
import { describeRunCounts } from "./run-counts.ts";
import type { AttemptFinish } from "../../src/store/port.ts";
import { newRun, tasksOf } from "../support/shapes.ts";

const T0 = Date.parse("2026-09-02T02:00:00Z");

const dirs: string[] = [];
describeStoreContract(
  "SQLite",
  async () => {
    const dir = mkdtempSync(join(tmpdir(), "idem-store-"));
    dirs.push(dir);
    return new SqliteStore(join(dir, "state.db"));
  },
  async (store) => {
    await store.close();
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  },
  { channels: false },
);

describeRunCounts("SQLite", async () => {
  const dir = mkdtempSync(join(tmpdir(), "idem-store-"));
  const store = new SqliteStore(join(dir, "state.db"));
  await store.migrate();
  return {
    store,
    async counts(runId) {
      const run = store.db.prepare("SELECT live_tasks, failed_tasks FROM runs WHERE run_id = ?").get(runId) as { live_tasks: number; failed_tasks: number };
      const rows = store.db.prepare("SELECT state, count(*) AS n FROM task_instances WHERE run_id = ? GROUP BY state").all(runId) as { state: string; n: number }[];
      return { liveTasks: run.live_tasks, failedTasks: run.failed_tasks, byState: Object.fromEntries(rows.map((r) => [r.state, r.n])) };
    },
    async setState(runId, taskId, state) {
      store.db.prepare("UPDATE task_instances SET state = ? WHERE run_id = ? AND task_id = ?").run(state, runId, taskId);
    },
    async close() {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}, { runs: 60 });

describe("SQLite store specifics", () => {
  it("uses WAL so the scheduler, workers and the CLI can share the file", async () => {
    const dir = mkdtempSync(join(tmpdir(), "idem-store-"));
    const store = new SqliteStore(join(dir, "state.db"));
    await store.migrate();
    expect(store.db.pragma("journal_mode", { simple: true })).toBe("wal");
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("migrates once, however many times it starts", async () => {
    const dir = mkdtempSync(join(tmpdir(), "idem-store-"));
    const path = join(dir, "state.db");
    for (let i = 0; i < 3; i++) {
      const store = new SqliteStore(path);
      await store.migrate();
      await store.close();
    }
    const store = new SqliteStore(path);
    await store.migrate();
    const rows = store.db.prepare("SELECT version FROM schema_migrations ORDER BY version").all();
    expect(rows).toEqual(MIGRATIONS.map((m) => ({ version: m.version })));
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("claims by reading the live-state indexes in order, with no sort of every queued row", async () => {
    const store = new SqliteStore(":memory:");
    await store.migrate();
    // 2,000 queued task instances, a fifth of them in a backfill, with statistics as ANALYZE keeps them.
    store.db.exec(`
      INSERT INTO runs (run_id, pipeline_id, interval_start, interval_end, business_date, state, trigger_kind, backfill_id, graph_version, params, created_at)
      WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200)
      SELECT 'p@' || i, 'p', i, i + 1, '2026-01-01', 'queued', iif(i % 5 = 0, 'backfill', 'schedule'), iif(i % 5 = 0, 'b', NULL), 'v', '{}', 0 FROM n;
      INSERT INTO task_instances (run_id, task_id, state, max_tries, trigger_rule, queued_at)
      WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200), m(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM m WHERE j < 9)
      SELECT 'p@' || i, 't' || j, 'queued', 1, 'all_success', i FROM n, m;
      ANALYZE;`);
    const plan = (sql: string, ...args: unknown[]) =>
      (store.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...args) as { detail: string }[]).map((p) => p.detail).join(" | ");
    expect(plan(SQL.selectQueuedCandidates, 72)).toMatch(/^SCAN t USING INDEX task_instances_queued/);
    expect(plan(SQL.selectQueuedCandidates, 72)).not.toMatch(/TEMP B-TREE/);
    expect(plan(SQL.selectWaitingCandidates, 0, 72)).toMatch(/^SCAN t USING INDEX task_instances_waiting/);
    expect(plan(SQL.selectWaitingCandidates, 0, 72)).not.toMatch(/TEMP B-TREE/);
    // The order key follows the run: set on insert into a backfill run, and when a run joins one.
    const flags = () => store.db.prepare("SELECT from_backfill AS f, count(*) AS n FROM task_instances GROUP BY f ORDER BY f").all();
    expect(flags()).toEqual([{ f: 0, n: 1600 }, { f: 1, n: 400 }]);
    store.db.exec("UPDATE runs SET backfill_id = 'b', trigger_kind = 'backfill' WHERE run_id = 'p@1'");
    expect(flags()).toEqual([{ f: 0, n: 1590 }, { f: 1, n: 410 }]);
    const [first] = store.db.prepare(SQL.selectQueuedCandidates).all(1) as { run_id: string }[];
    expect(first!.run_id).toBe("p@2");
    await store.close();
  });

  it("finishes and claims of one run read what changed, not the run: counters and indexes read in order", async () => {
    const store = new SqliteStore(":memory:");
    await store.migrate();
    // One run of 2,000 tasks, a chain through half of them, with statistics as ANALYZE keeps them.
    store.db.exec(`
      INSERT INTO runs (run_id, pipeline_id, interval_start, interval_end, business_date, state, trigger_kind, graph_version, params, created_at)
      VALUES ('p@1', 'p', 1, 2, '2026-01-01', 'queued', 'manual', 'v', '{}', 0);
      INSERT INTO task_instances (run_id, task_id, state, max_tries, trigger_rule, queued_at)
      WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
      SELECT 'p@1', 't' || i, iif(i % 2 = 0, 'success', 'queued'), 1, 'all_success', i FROM n;
      INSERT INTO task_edges (graph_version, parent, child)
      WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000) SELECT 'v', 't' || i, 't' || (i + 1) FROM n;
      ANALYZE;`);
    const plan = (sql: string, args: Record<string, unknown>) =>
      (store.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(args) as { detail: string }[]).map((p) => p.detail).join(" | ");
    expect(plan(SQL.runProgress, { runId: "p@1" })).toMatch(/^SEARCH runs USING INDEX sqlite_autoindex_runs_1 \(run_id=\?\)$/);
    expect(store.db.prepare("SELECT live_tasks, failed_tasks FROM runs").get()).toEqual({ live_tasks: 1000, failed_tasks: 0 });
    const runClaim = plan(SQL.selectRunCandidates, { runId: "p@1", now: 0, limit: 72 });
    expect(runClaim).toMatch(/SEARCH t USING INDEX task_instances_queued_by_run \(run_id=\?\)/);
    expect(runClaim).toMatch(/SEARCH t USING INDEX task_instances_waiting_by_run \(run_id=\? AND next_try_at<\?\)/);
    expect(runClaim).not.toMatch(/USING PRIMARY KEY/);
    const children = plan(SQL.waitingChildrenWithParents, { runId: "p@1", graphVersion: "v", parent: "t5" });
    expect(children).toMatch(/^SEARCH c USING PRIMARY KEY \(graph_version=\? AND parent=\?\)/);
    expect(children).not.toMatch(/^SCAN|\| SCAN/);
    const claimed = store.db.prepare(SQL.selectRunCandidates).all({ runId: "p@1", now: 0, limit: 3 }) as { task_id: string }[];
    expect(claimed.map((c) => c.task_id)).toEqual(["t1", "t3", "t5"]);
    await store.close();
  });

  it("counts the live and failing task instances of runs that existed before migration 17", async () => {
    const dir = mkdtempSync(join(tmpdir(), "idem-store-"));
    const path = join(dir, "state.db");
    const old = new Database(path);
    old.exec("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)");
    for (const m of MIGRATIONS.filter((m) => m.version < 17)) {
      old.exec(m.sql);
      old.prepare("INSERT INTO schema_migrations VALUES (?, ?, 0)").run(m.version, m.name);
    }
    old.exec(`
      INSERT INTO runs (run_id, pipeline_id, interval_start, interval_end, business_date, state, trigger_kind, graph_version, params, created_at)
      VALUES ('p@1', 'p', 1, 2, '2026-01-01', 'running', 'manual', 'v', '{}', 0), ('p@2', 'p', 2, 3, '2026-01-02', 'failed', 'manual', 'v', '{}', 0);
      INSERT INTO task_instances (run_id, task_id, state, max_tries, trigger_rule) VALUES
        ('p@1', 'a', 'success', 1, 'all_success'), ('p@1', 'b', 'running', 1, 'all_success'), ('p@1', 'c', 'scheduled', 1, 'all_success'),
        ('p@2', 'a', 'failed', 1, 'all_success'), ('p@2', 'b', 'upstream_failed', 1, 'all_success'), ('p@2', 'c', 'skipped', 1, 'all_success');`);
    old.close();
    const store = new SqliteStore(path);
    await store.migrate();
    expect(store.db.prepare("SELECT run_id, live_tasks, failed_tasks FROM runs ORDER BY run_id").all()).toEqual([
      { run_id: "p@1", live_tasks: 2, failed_tasks: 0 },
      { run_id: "p@2", live_tasks: 0, failed_tasks: 2 },
    ]);
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("keeps the dataset events, their ids and the id sequence when migration 22 builds their table again", async () => {
    const dir = mkdtempSync(join(tmpdir(), "idem-store-"));
    const path = join(dir, "state.db");
    const old = new Database(path);
    old.exec("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)");
    for (const m of MIGRATIONS.filter((m) => m.version < 22)) {
      old.exec(m.sql);
      old.prepare("INSERT INTO schema_migrations VALUES (?, ?, 0)").run(m.version, m.name);
    }
    old.exec(`
      INSERT INTO dataset_events (dataset, business_date, run_id, pipeline_id, task_id, trigger_kind, at) VALUES
        ('orders', '2026-01-01', 'p@1', 'p', 'load', 'schedule', 10), ('orders', '2026-01-02', 'p@2', 'p', 'load', 'schedule', 20);
`);
    old.close();
    const store = new SqliteStore(path);
    await store.migrate();
    expect((await store.listDatasetEvents({})).map((e) => [e.id, e.source, e.businessDate, e.source === "run" && e.runId])).toEqual([
      [2, "run", "2026-01-02", "p@2"],
      [1, "run", "2026-01-01", "p@1"],
    ]);
    const next = await store.recordExternalDatasetEvent({
      dataset: "orders", businessDate: "2026-01-03", idempotencyKey: "k", source: "cli", actor: "ana", summary: null, at: 30,
      audit: { at: 30, actor: "ana", action: "dataset-event", pipelineId: null },
    });
    expect(next.event.id).toBe(3);
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("records finishes that arrive in one turn together, each as if recorded one by one, one that throws failing alone", async () => {
    const dir = mkdtempSync(join(tmpdir(), "idem-store-"));
    const store = new SqliteStore(join(dir, "state.db"));
    await store.migrate();
    await store.savePipelineVersion({ pipelineId: "p", version: "v1", definition: {}, edges: [{ parent: "x", child: "z" }, { parent: "y", child: "z" }], createdAt: T0 });
    await store.createRunIfAbsent(newRun({ tasks: tasksOf(["w", "x", "y", "z"], [["x", "z"], ["y", "z"]]) }));
    const claimed = new Map((await store.claimReady({ workerId: "w", pid: 1, limit: 10, now: T0, leaseMs: 30_000, logDir: "/logs" })).map((c) => [c.taskId, c]));
    const end = (task: string, overrides: Partial<AttemptFinish> = {}): AttemptFinish => ({
      attemptId: claimed.get(task)!.attemptId, workerId: "w", now: T0 + 1, outcome: "success", retryable: false, retryAt: null,
      exitCode: null, errorClass: null, errorMessage: null, summary: null, skipReason: null, ...overrides,
    });
    const writeTransactions = countImmediateTransactions(store);
    const outcomes = await Promise.allSettled([
      store.finishAttempt(end("x", { outcome: "failed", errorClass: ErrorClass.TaskFailed, errorMessage: "x" })),
      store.finishAttempt(end("x")), // the same attempt again: refused, as it would be after the first
      store.finishAttempt(end("w", { datasets: [null as unknown as string] })), // a write that throws
      store.finishAttempt(end("y", { outcome: "failed", errorClass: ErrorClass.TaskFailed, errorMessage: "y" })),
    ]);
    // The batch with no savepoint, rolled back whole when w's write threw; then again, a savepoint per finish.
    expect(writeTransactions()).toBe(2);
    expect(outcomes.map((o) => (o.status === "fulfilled" ? o.value : "rejected"))).toEqual([
      { accepted: true, taskState: "failed", runState: null },
      { accepted: false, taskState: "failed", runState: null },
      "rejected",
      { accepted: true, taskState: "failed", runState: null },
    ]);
    // w's failed write left nothing behind: still running, its attempt open; z settled by x alone.
    const byTask = new Map((await store.listTaskInstances("p@2026-09-01")).map((t) => [t.taskId, t]));
    expect(byTask.get("w")!.state).toBe("running");
    expect((await store.listAttempts("p@2026-09-01", "w"))[0]!.state).toBe("running");
    expect(byTask.get("z")).toMatchObject({ state: "upstream_failed", reason: "upstream: 1 task(s) failed" });
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
});

/** Counts the IMMEDIATE (writing) transactions the store opens from now on. */
function countImmediateTransactions(store: SqliteStore): () => number {
  let n = 0;
  const transaction = store.db.transaction.bind(store.db);
  vi.spyOn(store.db, "transaction").mockImplementation(((fn: (...args: unknown[]) => unknown) => {
    const t = transaction(fn);
    return Object.assign((...args: unknown[]) => t(...args), { immediate: (...args: unknown[]) => (n++, t.immediate(...args)) });
  }) as typeof store.db.transaction);
  return () => n;
}
