import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { SQL } from "../../src/store/sqlite/sql.ts";
import type { AttemptFinish } from "../../src/store/port.ts";

/**
 * What the SQLite claim and finish run per task, statement by statement: the store's cost per
 * task is these calls (bench/sqlite/store-loop.ts). A statement that comes back per attempt (the
 * run read again per claimed attempt, the attempt read before the finish that fences it) fails here.
 */
const T0 = Date.parse("2026-09-02T02:00:00Z");
const RUNS = 30;

let dir: string;
let store: SqliteStore;
let calls: Map<string, number>;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "idem-hot-path-"));
  store = new SqliteStore(join(dir, "state.db"));
  await store.migrate();
  // RUNS runs of two independent queued tasks, as a scheduler would have created them.
  store.db.exec(`INSERT INTO runs (run_id, pipeline_id, interval_start, interval_end, business_date, state, trigger_kind, graph_version, params, created_at)
    WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ${RUNS})
    SELECT 'p@' || i, 'p', i, i + 1, '2026-09-01', 'queued', 'schedule', 'v1', '{"k":1}', 1 FROM s`);
  store.db.exec(`INSERT INTO task_instances (run_id, task_id, state, max_tries, trigger_rule, queued_at)
    WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ${RUNS})
    SELECT 'p@' || i, t.task_id, 'queued', 2, 'all_success', 1 FROM s, (SELECT 'a' AS task_id UNION ALL SELECT 'b') AS t`);
  calls = new Map();
  const statements = (store as unknown as { statements: Record<string, Record<string, (...a: unknown[]) => unknown>> }).statements;
  for (const [name, statement] of Object.entries(statements)) {
    for (const method of ["run", "get", "all"]) {
      const original = statement[method]!.bind(statement);
      statement[method] = (...a: unknown[]) => {
        calls.set(name, (calls.get(name) ?? 0) + 1);
        return original(...a);
      };
    }
  }
});

afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const claim = (limit: number) => store.claimReady({ workerId: "w1", pid: 1, limit, now: T0, leaseMs: 30_000, logDir: "/logs" });
const success = (attemptId: number, overrides: Partial<AttemptFinish> = {}): AttemptFinish => ({
  attemptId, workerId: "w1", now: T0 + 5, outcome: "success", retryable: true, retryAt: null,
  exitCode: 0, errorClass: null, errorMessage: null, summary: null, skipReason: null, ...overrides,
});
const taken = () => {
  const seen = Object.fromEntries(calls);
  calls.clear();
  return seen;
};

describe("the SQLite claim and finish, statement by statement", () => {
  it("a claim of one task from each of 30 runs reads its candidates once and writes three rows per attempt, nothing per run", async () => {
    const got = await claim(RUNS);
    expect(new Set(got.map((a) => a.runId)).size).toBe(RUNS);
    expect(taken()).toEqual({ selectWaitingCandidates: 1, selectQueuedCandidates: 1, insertAttempt: RUNS, startTaskInstance: RUNS, markRunRunning: RUNS });
    // What the attempt carries of its run and task instance came from the candidate row.
    expect(got[0]).toMatchObject({ runId: "p@1", pipelineId: "p", taskId: "a", tryNumber: 1, maxTries: 2, intervalStart: 1, intervalEnd: 2, businessDate: "2026-09-01", graphVersion: "v1", params: { k: 1 }, trigger: "schedule", backfillId: null, firstStartedAt: T0 });
    expect((await store.getRun("p@1"))!.state).toBe("running");
    taken();

    // The second task of each run: the runs are running already, nothing is written to them.
    await claim(RUNS);
    expect(taken()).toEqual({ selectWaitingCandidates: 1, selectQueuedCandidates: 1, insertAttempt: RUNS, startTaskInstance: RUNS });
  });

  it("a finish is fenced by its own UPDATE: no read of the attempt before it, one read after it", async () => {
    const got = await claim(RUNS);
    taken();
    const transactions = { outer: 0, savepoints: 0 };
    const transaction = store.db.transaction.bind(store.db);
    store.db.transaction = ((fn: (...a: unknown[]) => unknown) => {
      const wrapped = transaction(fn);
      const counted = (run: (...a: unknown[]) => unknown) => (...a: unknown[]) => {
        transactions[store.db.inTransaction ? "savepoints" : "outer"]++;
        return run(...a);
      };
      return Object.assign(counted(wrapped), { default: counted(wrapped.default), deferred: counted(wrapped.deferred), immediate: counted(wrapped.immediate), exclusive: counted(wrapped.exclusive) });
    }) as unknown as typeof store.db.transaction;
    const outcomes = await Promise.all(got.map((a) => store.finishAttempt(success(a.attemptId, { startedAt: T0 + 2 }))));
    // One write transaction for the 30, and no savepoint: none of them threw.
    expect(transactions).toEqual({ outer: 1, savepoints: 0 });
    expect(outcomes.every((o) => o.accepted && o.taskState === "success" && o.runState === null)).toBe(true);
    expect(taken()).toEqual({ finishAttempt: RUNS, selectFinishedAttempt: RUNS, setTaskState: RUNS, waitingChildrenWithParents: RUNS, runProgress: RUNS });
    const [attempt] = await store.listAttempts("p@1", "a");
    expect(attempt).toMatchObject({ state: "success", startedAt: T0 + 2, endedAt: T0 + 5 });

    // Refused: the same attempt again, another worker's, an attempt id that does not exist.
    const [second] = await claim(1);
    taken();
    expect(await store.finishAttempt(success(got[0]!.attemptId))).toEqual({ accepted: false, taskState: "success", runState: null });
    expect(await store.finishAttempt(success(second!.attemptId, { workerId: "w2" }))).toEqual({ accepted: false, taskState: "running", runState: null });
    expect(await store.finishAttempt(success(9_999))).toEqual({ accepted: false, taskState: null, runState: null });
    expect(taken()).toEqual({ finishAttempt: 3, selectAttemptForFinish: 3 });
    expect((await store.listAttempts(second!.runId, second!.taskId))[0]).toMatchObject({ state: "running", endedAt: null });
  });

  it("a finish refuses an attempt that is still running but no longer its task instance's current one", async () => {
    const [a] = await claim(1);
    store.db.prepare("UPDATE task_instances SET current_attempt_id = NULL WHERE run_id = ? AND task_id = ?").run(a!.runId, a!.taskId);
    expect(await store.finishAttempt(success(a!.attemptId))).toEqual({ accepted: false, taskState: "running", runState: null });
    expect((await store.listAttempts(a!.runId, a!.taskId))[0]!.state).toBe("running");
  });
});

describe("what a task instance's state change costs on SQLite", () => {
  it("every index of task_instances is read by some statement (each one is kept on every state change)", () => {
    const indexes = (store.db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'task_instances' AND sql IS NOT NULL").all() as { name: string }[]).map((r) => r.name);
    const read = new Set<string>();
    for (const text of Object.values(SQL)) {
      const named = [...new Set([...text.matchAll(/[@:$]([A-Za-z_]\w*)/g)].map((m) => m[1]!))];
      const params = named.length ? [Object.fromEntries(named.map((k) => [k, null]))] : Array(text.split("?").length - 1).fill(null);
      for (const { detail } of store.db.prepare(`EXPLAIN QUERY PLAN ${text}`).all(...params) as { detail: string }[]) {
        for (const index of indexes) if (new RegExp(`INDEX ${index}\\b`).test(detail)) read.add(index);
      }
    }
    expect(indexes.filter((i) => !read.has(i))).toEqual([]);
  });

  it("runs one trigger per update of an unmapped task instance, with no IN list in it; the mapped instances' counts only for mapped ones", () => {
    const triggers = store.db.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'task_instances' AND sql LIKE '%AFTER UPDATE%' ORDER BY name").all() as { name: string; sql: string }[];
    expect(triggers.map((t) => t.name)).toEqual(["task_instances_map_counts", "task_state_changed"]);
    const [mapCounts, stateChanged] = triggers;
    expect(stateChanged!.sql).not.toMatch(/\bIN\s*\(/i);
    // Fired for mapped instances alone: an unmapped one's update pays only this WHEN.
    expect(mapCounts!.sql).toMatch(/FOR EACH ROW WHEN NEW\.map_task IS NOT NULL/);
  });
});

describe("statements that are compiled once", () => {
  // SQLite's planner reads a bare bound LIMIT's value, which makes the statement expire whenever
  // that parameter is bound: better-sqlite3 binds on every call, so it was compiled on every call
  // (measured in docs/benchmarks.md, "SQLite: the store in the worker's loop").
  it("binds no LIMIT bare (\`LIMIT ?\`): SQLite would compile the statement again on every call", () => {
    const bare = Object.entries(SQL).filter(([, text]) => /LIMIT\s+[?@:$]/i.test(text)).map(([name]) => name);
    expect(bare).toEqual([]);
  });
});

describe("the SQLite connection's settings", () => {
  it("keeps statement journals and temporary B-trees in memory, and the database durable (WAL, synchronous NORMAL)", () => {
    expect(store.db.pragma("temp_store", { simple: true })).toBe(2);
    expect(store.db.pragma("journal_mode", { simple: true })).toBe("wal");
    expect(store.db.pragma("synchronous", { simple: true })).toBe(1);
  });
});
