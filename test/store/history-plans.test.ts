import type Database from "better-sqlite3";
import pg from "pg";
import { seededSqlite, sqlitePlan } from "./plans.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import { SQL as POSTGRES_SQL } from "../../src/store/postgres/sql.ts";
import { SQL as SQLITE_SQL } from "../../src/store/sqlite/sql.ts";
import { dropSchema, freshSchema, schemaUrl, testPostgresUrl } from "../process/postgres-support.ts";

/**
 * The statements a worker's claim and finish and a scheduler's tick run, planned on a store that
 * holds years of finished runs: none may read the history (a full scan of runs, task instances or
 * attempts, or every run of a pipeline). On SQLite (which the store never ANALYZEs) a plan names
 * its indexes; on PostgreSQL, the generic plan a prepared statement settles on, after ANALYZE.
 */
const HISTORY_RUNS = 20_000;
const DAY_MS = 86_400_000;
const FIRST_DAY = Date.parse("1999-01-01T00:00:00Z");

const TICK = ["selectPipelineState", "countLiveRuns", "selectExpiredAttempts", "selectLiveBackfills", "selectRun", "selectRunByInterval", "loseAttempt", "selectLease"] as const;
/** A metrics scrape's counts: O(what is live), or a short range of recent intervals. */
const METRICS = ["metricLiveRuns", "metricRecentRuns", "metricTaskInstancesOfLiveRuns", "metricQueuedByPool", "metricOpenIncidents"] as const;
const SQLITE_HOT = [
  ...TICK,
  ...METRICS,
  // claim
  "selectQueuedCandidates", "selectWaitingCandidates", "selectRunCandidates", "selectBackfillCandidates", "countRunningAll",
  "countRunningByPipeline", "poolsInUse", "startTaskInstance", "markRunRunning",
  // finish and downstream eligibility
  "selectAttemptForFinish", "finishAttempt", "selectFinishedAttempt", "settleTaskInstance", "setTaskState", "queueTaskInstance", "waitingChildrenWithParents",
  "childInstances", "runProgress", "finishRun", "nextRetryAt", "renewLease", "renewOwnLease", "takeOverLease", "renewLeases",
] as const;
const POSTGRES_HOT = [
  ...TICK,
  ...METRICS,
  "selectCandidates", "selectRunCandidates", "selectBackfillCandidates", "lockCaps", "countRunningOfPipelines", "lockPools", "startAttempts",
  "lockAttemptsForFinish", "finishAttempts", "waitingChildrenOfAttempts", "runsProgressOfAttempts", "runsProgress", "taskStatesOfAttempts",
  "settleTaskInstancesOfRuns", "finishRuns", "setTaskState", "renewLease", "tryLead", "renewLeases", "recordStartedAt",
] as const;

/** SQLite reads a table whole only through an index of live rows (a partial index). */
const LIVE_INDEXES = /USING (COVERING )?INDEX (task_instances_queued|task_instances_waiting|task_instances_running_run|task_instances_running_pool|attempts_running|runs_live|backfills_live|incidents_open)\b/;

function historySql(dialect: "sqlite" | "postgres"): string[] {
  const day = dialect === "postgres" ? "to_char(to_timestamp(s / 1000) AT TIME ZONE 'UTC', 'YYYY-MM-DD')" : "date(s / 1000, 'unixepoch')";
  const numbers = dialect === "postgres"
    ? `(SELECT i, 'hist' || (i % 10) AS pipeline_id, ${FIRST_DAY}::bigint + (i / 10)::bigint * ${DAY_MS} AS s FROM generate_series(0, ${HISTORY_RUNS - 1}) AS i) AS r`
    : `(WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${HISTORY_RUNS - 1})
        SELECT i, 'hist' || (i % 10) AS pipeline_id, ${FIRST_DAY} + (i / 10) * ${DAY_MS} AS s FROM n) AS r`;
  const tasks = dialect === "postgres" ? "generate_series(0, 4) AS j" : "(WITH RECURSIVE m(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM m WHERE j < 4) SELECT j FROM m) AS m";
  return [
    `INSERT INTO runs (run_id, pipeline_id, interval_start, interval_end, business_date, state, trigger_kind, graph_version, params, created_at, started_at, ended_at)
     SELECT pipeline_id || '@' || ${day}, pipeline_id, s, s + ${DAY_MS}, ${day}, CASE WHEN i % 50 = 49 THEN 'failed' ELSE 'success' END, 'schedule', 'hist', '{}',
            s + ${DAY_MS + 60_000}, s + ${DAY_MS + 61_000}, s + ${DAY_MS + 120_000} FROM ${numbers}`,
    `INSERT INTO task_instances (run_id, task_id, state, try_number, max_tries, trigger_rule, queued_at, started_at, ended_at)
     SELECT r.run_id, 't' || j, CASE WHEN r.state = 'failed' AND j = 4 THEN 'failed' ELSE 'success' END, 1, 1, 'all_success',
            r.started_at + j * 10000, r.started_at + j * 10000, r.started_at + j * 10000 + 9000 FROM runs r, ${tasks}`,
    `INSERT INTO attempts (run_id, task_id, try_number, state, worker_id, pid, started_at, ended_at, log_path)
     SELECT run_id, task_id, 1, state, 'history', 1, started_at, ended_at, 'logs/' || run_id FROM task_instances`,
    // and live work beside it, as a busy store has
    `INSERT INTO runs (run_id, pipeline_id, interval_start, interval_end, business_date, state, trigger_kind, graph_version, params, created_at)
     VALUES ('live@1', 'live', 1, 2, '2026-01-01', 'running', 'manual', 'live', '{}', 1)`,
    `INSERT INTO task_instances (run_id, task_id, state, max_tries, trigger_rule, queued_at) VALUES ('live@1', 'a', 'queued', 1, 'all_success', 1), ('live@1', 'b', 'running', 1, 'all_success', 1)`,
  ];
}

/** Plan lines that read history: a full scan of a big table, or every run of one pipeline. */
function historyReads(plan: readonly string[]): string[] {
  return plan.filter((line) =>
    /^SCAN (?!CONSTANT ROW|json_each|\(subquery|sqlite_sequence|pools|leases|workers|backfills|pipelines)/.test(line) && !LIVE_INDEXES.test(line)
    || /runs_by_interval \(pipeline_id=\?\)$/.test(line)
    || /Seq Scan on (runs|task_instances|attempts)\b/.test(line));
}

describe("hot statements on a store with 20,000 finished runs", () => {
  describe("SQLite", () => {
    let db: Database.Database;
    let dispose = () => {};
    beforeAll(async () => {
      ({ db, dispose } = await seededSqlite("idem-history-plans-", historySql("sqlite")));
    });
    afterAll(() => dispose());

    const planOf = (text: string): string[] => sqlitePlan(db, text);

    it.each(SQLITE_HOT)("%s reads no history", (name) => {
      const plan = planOf(SQLITE_SQL[name as keyof typeof SQLITE_SQL]);
      expect(plan.length).toBeGreaterThan(0);
      expect(historyReads(plan), plan.join(" | ")).toEqual([]);
    });

    it("would see a claim that lost its index", () => {
      db.exec("DROP INDEX task_instances_queued");
      try {
        expect(historyReads(planOf(SQLITE_SQL.selectQueuedCandidates))).not.toEqual([]);
      } finally {
        db.exec("CREATE INDEX task_instances_queued ON task_instances (from_backfill, priority DESC, queued_at, task_id) WHERE state = 'queued'");
      }
    });
  });

  const url = testPostgresUrl();
  describe.skipIf(!url)("PostgreSQL", () => {
    const schema = freshSchema();
    let client: pg.Client;
    beforeAll(async () => {
      const store = new PostgresStore({ connectionString: schemaUrl(url!, schema), poolSize: 1 });
      await store.migrate();
      await store.close();
      client = new pg.Client({ connectionString: url!, options: `-c search_path=${schema}` });
      await client.connect();
      await client.query("BEGIN");
      for (const statement of historySql("postgres")) await client.query(statement);
      await client.query("COMMIT");
      await client.query("ANALYZE");
      // The plan a prepared statement keeps once it stops planning per call.
      await client.query("SET plan_cache_mode = force_generic_plan");
    }, 120_000);
    afterAll(async () => {
      await client?.end();
      await dropSchema(url!, schema);
    });

    const planOf = async (text: string, before?: string): Promise<string[]> => {
      const params = Math.max(0, ...[...text.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])));
      await client.query("BEGIN");
      try {
        if (before) await client.query(before);
        await client.query(`PREPARE hot AS ${text}`);
        const explain = params ? `EXPLAIN EXECUTE hot(${Array(params).fill("NULL").join(", ")})` : "EXPLAIN EXECUTE hot";
        return (await client.query(explain)).rows.map((row) => String(row["QUERY PLAN"]).trim());
      } finally {
        await client.query("ROLLBACK");
        await client.query("DEALLOCATE ALL");
      }
    };

    it.each(POSTGRES_HOT)("%s reads no history", async (name) => {
      const plan = await planOf(POSTGRES_SQL[name as keyof typeof POSTGRES_SQL]);
      expect(plan.length).toBeGreaterThan(0);
      expect(historyReads(plan), plan.join(" | ")).toEqual([]);
    });

    it("would see a claim that lost its index", async () => {
      // With no index of queued rows left, the claim reads every task instance. DDL is
      // transactional here: the indexes are back when the plan's transaction rolls back.
      const dropped = "DROP INDEX task_instances_queued; DROP INDEX task_instances_queued_by_run; DROP INDEX task_instances_live_by_run";
      expect(historyReads(await planOf(POSTGRES_SQL.selectCandidates, dropped))).not.toEqual([]);
    });
  });
});
