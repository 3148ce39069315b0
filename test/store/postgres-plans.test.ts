import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import { SQL, type StatementName } from "../../src/store/postgres/sql.ts";
import type { ClaimedAttempt } from "../../src/store/port.ts";
import { dropSchema, freshSchema, testPostgresUrl, withAdmin } from "../process/postgres-support.ts";

const url = testPostgresUrl();
const HISTORY_RUNS = 3_000;
const QUEUED_RUNS = 200;

/**
 * The hot statements as the store runs them: prepared, with the generic plan its connections
 * force (connection.ts), over a store with history (finished runs and attempts) and many
 * running rows. Each must reach its rows by key from what it is given, so its cost follows the
 * batch, not the history nor the number of attempts running.
 */
describe.skipIf(!url)("PostgreSQL hot paths' plans", () => {
  const schema = freshSchema();
  let store: PostgresStore;
  let running: ClaimedAttempt[];

  beforeAll(async () => {
    store = new PostgresStore({ connectionString: url!, schema, poolSize: 2 });
    await store.migrate();
    await withAdmin(url!, async (c) => {
      await c.query(`SET search_path TO "${schema}"`);
      await c.query(`INSERT INTO runs (run_id, pipeline_id, interval_start, interval_end, business_date, state, trigger_kind, graph_version, params, created_at)
        SELECT 'old@' || i, 'p', i, i + 1, '2025-01-01', 'success', 'manual', 'v', '{}', 1 FROM generate_series(1, $1::int) AS i`, [HISTORY_RUNS]);
      await c.query(`INSERT INTO task_instances (run_id, task_id, state, max_tries, trigger_rule, queued_at)
        SELECT 'old@' || i, 't' || j, 'success', 1, 'all_success', 1 FROM generate_series(1, $1::int) AS i, generate_series(0, 9) AS j`, [HISTORY_RUNS]);
      await c.query(`INSERT INTO attempts (run_id, task_id, try_number, state, worker_id, pid, started_at, log_path)
        SELECT 'old@' || i, 't' || j, 1, 'success', 'w0', 1, 1, 'x' FROM generate_series(1, $1::int) AS i, generate_series(0, 9) AS j`, [HISTORY_RUNS]);
      await c.query(`INSERT INTO runs (run_id, pipeline_id, interval_start, interval_end, business_date, state, trigger_kind, graph_version, params, created_at)
        SELECT 'new@' || i, 'p', -i, -i + 1, '2026-01-01', 'queued', 'manual', 'v', '{}', 1 FROM generate_series(1, $1::int) AS i`, [QUEUED_RUNS]);
      await c.query(`INSERT INTO task_instances (run_id, task_id, state, max_tries, trigger_rule, queued_at)
        SELECT 'new@' || i, 't' || j, 'queued', 1, 'all_success', 1 FROM generate_series(1, $1::int) AS i, generate_series(0, 9) AS j`, [QUEUED_RUNS]);
      // Statistics taken while nothing runs, as after a quiet night: the partial indexes of
      // running rows then look empty to the planner.
      await c.query("ANALYZE");
    });
    running = await store.claimReady({ workerId: "w1", pid: 1, limit: 500, now: 10, leaseMs: 60_000, logDir: "/logs" });
  });

  afterAll(async () => {
    await store?.close();
    await dropSchema(url!, schema);
  });

  /** EXPLAIN ANALYZE of the statement's generic plan, in a transaction rolled back. */
  async function plan(name: StatementName, values: unknown[]): Promise<string> {
    return withAdmin(url!, async (c: pg.Client) => {
      await c.query(`SET search_path TO "${schema}"`);
      await c.query("SET plan_cache_mode = force_generic_plan");
      await c.query(`PREPARE hot AS ${SQL[name]}`);
      await c.query("BEGIN");
      try {
        // EXPLAIN takes no parameters: the values go in as literals, typed by the prepared statement.
        const literals = values.map((v) => (v === null ? "NULL" : c.escapeLiteral(Array.isArray(v) ? arrayLiteral(v) : String(v))));
        const { rows } = await c.query(`EXPLAIN (ANALYZE, COSTS OFF) EXECUTE hot(${literals.join(", ")})`);
        return rows.map((r) => r["QUERY PLAN"]).join("\n");
      } finally {
        await c.query("ROLLBACK");
      }
    });
  }

  const arrayLiteral = (values: unknown[]) =>
    `{${values.map((v) => (v === null ? "NULL" : `"${String(v).replace(/["\\]/g, "\\$&")}"`)).join(",")}}`;

  const batch = () => running.slice(0, 20);

  it("claims read each candidate's run by its key, not the whole runs table", async () => {
    expect(running).toHaveLength(500);
    for (const [name, values] of [
      ["selectCandidates", [100, 10]],
      ["selectRunCandidates", ["new@150", 100, 10]],
    ] as [StatementName, unknown[]][]) {
      const p = await plan(name, values);
      expect(p, name).not.toMatch(/Seq Scan on runs/);
      expect(p, name).toMatch(/Index Scan using runs_pkey on runs/);
    }
  });

  it("finishes reach the batch's attempts by key, not by reading every running row", async () => {
    const ids = batch().map((a) => a.attemptId);
    const workers = ids.map(() => "w1");
    const n = ids.length;
    for (const [name, values] of [
      ["lockAttemptsForFinish", [ids, workers]],
      ["finishAttempts", [
        ids, workers, ids.map(() => "success"), ids.map(() => 20), ids.map(() => 0), ids.map(() => null), ids.map(() => null),
        ids.map(() => null), ids.map(() => "success"), ids.map(() => null), ids.map(() => null), ids.map(() => 20),
      ]],
      ["recordStartedAt", [ids, workers, ids.map(() => 15)]],
    ] as [StatementName, unknown[]][]) {
      const p = await plan(name, values);
      expect(p, name).not.toMatch(/task_instances_running_run|attempts_running|Seq Scan on (attempts|task_instances)/);
      // A join filter over the running rows shows up as rows removed: none are read to be thrown away.
      for (const removed of p.matchAll(/Rows Removed by (?:Join )?Filter: (\d+)/g)) expect(Number(removed[1]), `${name}\n${p}`).toBeLessThan(n);
    }
  });
});
