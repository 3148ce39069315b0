import type Database from "better-sqlite3";
import pg from "pg";
import { postgresPlanTree, seededSqlite, sqlitePlan, type PlanNode } from "./plans.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import { SQL as POSTGRES_SQL } from "../../src/store/postgres/sql.ts";
import { SQL as SQLITE_SQL } from "../../src/store/sqlite/sql.ts";
import { dropSchema, freshSchema, schemaUrl, testPostgresUrl } from "../process/postgres-support.ts";

/**
 * A clear or mark by key touches O(that key's descendants), not O(the run): every statement
 * clearKeys and markKeys run (a selector's lookup, the chained and downstream instances by id,
 * the mapped task's row, maxActive's places, the settle and what it reopens) is planned on a run
 * of 20,000 mapped instances with a chain of 20,000 more. None may scan the run's task
 * instances, nor read every instance of the mapped task (an index search on the run, or on run
 * and task, alone). On SQLite a plan names its indexes; on PostgreSQL the generic plan a prepared
 * statement settles on, after ANALYZE.
 */
const KEYS = 20_000;

const SQLITE_KEY_ACTIONS = [
  "mapInstanceOfKey", "mapInstancesInRange", "mapInstancesFrom", "selectRun", "selectTaskInstance", "mapCounts", "resetTaskInstance",
  "mapReopen", "queueTaskInstance", "mapActive", "mapReleaseHeld", "reopenRun", "settleByHand", "childInstances", "mapChainedChildren",
  "waitingChildrenWithParents", "runProgress", "mapHold", "mapReleaseReady", "mapParentOf",
] as const;
const POSTGRES_KEY_ACTIONS = [
  "mapInstanceOfKey", "mapInstancesInRange", "mapInstancesFrom", "lockRun", "selectTaskInstance", "lockTaskInstance", "mapCounts",
  "resetTaskInstance", "mapReopen", "settleTaskInstancesOfRuns", "mapActive", "mapReleaseHeld", "reopenRun", "settleByHand", "lockChildren",
  "mapChainedChildren", "mapHold", "mapReleaseReady", "mapParentOf",
] as const;

function bigRunSql(dialect: "sqlite" | "postgres"): string[] {
  const numbers = dialect === "postgres"
    ? `generate_series(0, ${KEYS - 1}) AS n(i)`
    : `(WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${KEYS - 1}) SELECT i FROM n) AS n`;
  const key = dialect === "postgres" ? "'2026-' || lpad(i::text, 6, '0')" : "'2026-' || substr('000000' || i, -6)";
  return [
    `INSERT INTO runs (run_id, pipeline_id, interval_start, interval_end, business_date, state, trigger_kind, graph_version, params, created_at)
     VALUES ('big@1', 'big', 1, 2, '2026-01-01', 'success', 'manual', 'big', '{}', 1)`,
    `INSERT INTO task_instances (run_id, task_id, state, max_tries, trigger_rule, queued_at, map_live, map_failing, map_total, map_max_active)
     VALUES ('big@1', 'load', 'success', 1, 'all_success', 1, 0, 0, ${KEYS}, 8), ('big@1', 'check', 'success', 1, 'all_success', 1, 0, 0, ${KEYS}, NULL)`,
    `INSERT INTO task_instances (run_id, task_id, state, max_tries, trigger_rule, queued_at) VALUES ('big@1', 'report', 'success', 1, 'all_success', 1)`,
    `INSERT INTO task_instances (run_id, task_id, state, try_number, max_tries, trigger_rule, queued_at, map_task, map_key, map_position, map_item)
     SELECT 'big@1', 'load[' || ${key} || ']', 'success', 1, 1, 'all_success', 1, 'load', ${key}, i, '"x"' FROM ${numbers}`,
    `INSERT INTO task_instances (run_id, task_id, state, try_number, max_tries, trigger_rule, queued_at, map_task, map_key, map_position, map_item, map_parent)
     SELECT 'big@1', 'check[' || ${key} || ']', 'success', 1, 1, 'all_success', 1, 'check', ${key}, i, '"x"', 'load[' || ${key} || ']' FROM ${numbers}`,
    // and a mapped task of the same run whose instances all wait (held under maxActive): live rows of the run
    `INSERT INTO task_instances (run_id, task_id, state, max_tries, trigger_rule, map_task, map_key, map_position, map_item)
     SELECT 'big@1', 'wait[' || ${key} || ']', 'scheduled', 1, 'all_success', 'wait', ${key}, i, '"x"' FROM ${numbers}`,
    `INSERT INTO task_edges (graph_version, parent, child) VALUES ('big', 'load', 'check'), ('big', 'check', 'report')`,
  ];
}

/** SQLite plan lines that read the run's instances, or every instance of a task. */
function sqliteWideReads(plan: readonly string[]): string[] {
  return plan.filter((line) =>
    /^SCAN task_instances\b/.test(line)
    || (/task_instances/.test(line) && /\(run_id=\?( AND map_task=\?)?\)$/.test(line) && !/task_instances_map_(active|held|ready|waiting)\b/.test(line)));
}


/** PostgreSQL plan nodes that read the run's instances, or every instance of a task. */
function postgresWideReads(root: PlanNode): string[] {
  const wide: string[] = [];
  const visit = (node: PlanNode) => {
    if (node["Node Type"] === "Seq Scan" && node["Relation Name"] === "task_instances") wide.push("Seq Scan on task_instances");
    const index = node["Index Name"];
    // An index of a few rows per task (maxActive's places, the first held one) is read whole; any other by a key.
    const keyed = /task_id|map_key|map_parent/.test(node["Index Cond"] ?? "") || /^task_instances_map_(active|held|ready)$/.test(index ?? "");
    if (index?.startsWith("task_instances") && !keyed) {
      wide.push(`${index}: ${node["Index Cond"] ?? "no condition"}`);
    }
    for (const child of node.Plans ?? []) visit(child);
  };
  visit(root);
  return wide;
}

describe("a clear or mark by key on a run of 20,000 mapped instances", () => {
  describe("SQLite", () => {
    let db: Database.Database;
    let dispose = () => {};
    beforeAll(async () => {
      ({ db, dispose } = await seededSqlite("idem-key-plans-", bigRunSql("sqlite")));
    });
    afterAll(() => dispose());

    const planOf = (text: string): string[] => sqlitePlan(db, text);

    it.each(SQLITE_KEY_ACTIONS)("%s reads no more than the key's own instances", (name) => {
      const plan = planOf(SQLITE_SQL[name]);
      expect(plan.length).toBeGreaterThan(0);
      expect(sqliteWideReads(plan), plan.join(" | ")).toEqual([]);
    });

    it("a glob's prefix is a range on the index of keys", () => {
      expect(planOf(SQLITE_SQL.mapInstancesInRange).join(" | ")).toMatch(/USING INDEX task_instances_map_identity \(run_id=\? AND map_task=\? AND map_key>\? AND map_key<\?\)/);
    });

    it("would see a lookup that reads every instance of the task", () => {
      expect(sqliteWideReads(planOf(SQLITE_SQL.mapExistingKeys))).not.toEqual([]);
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
      for (const statement of bigRunSql("postgres")) await client.query(statement);
      await client.query("COMMIT");
      await client.query("ANALYZE");
      // The plan a prepared statement keeps once it stops planning per call.
      await client.query("SET plan_cache_mode = force_generic_plan");
    }, 120_000);
    afterAll(async () => {
      await client?.end();
      await dropSchema(url!, schema);
    });

    const planOf = (text: string): Promise<PlanNode> => postgresPlanTree(client, text);

    it.each(POSTGRES_KEY_ACTIONS)("%s reads no more than the key's own instances", async (name) => {
      const plan = await planOf(POSTGRES_SQL[name]);
      expect(postgresWideReads(plan), JSON.stringify(plan)).toEqual([]);
    });

    it("a glob's prefix is a range on the index of keys", async () => {
      expect(JSON.stringify(await planOf(POSTGRES_SQL.mapInstancesInRange))).toMatch(/task_instances_map_identity.*map_key >= \$3.*map_key < \$4/);
    });

    it("would see a lookup that reads every instance of the task", async () => {
      expect(postgresWideReads(await planOf(POSTGRES_SQL.mapExistingKeys))).not.toEqual([]);
    });
  });
});
