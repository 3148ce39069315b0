import type Database from "better-sqlite3";
import pg from "pg";
import { postgresPlanTree, seededSqlite, sqlitePlan, type PlanNode } from "./plans.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import { SQL as POSTGRES_SQL } from "../../src/store/postgres/sql.ts";
import { SQL as SQLITE_SQL } from "../../src/store/sqlite/sql.ts";
import { dropSchema, freshSchema, schemaUrl, testPostgresUrl } from "../process/postgres-support.ts";

/**
 * A pipeline's versions timeline pages the runs of each code version (`pageRuns` with a code
 * version: the statement pageRunsOfCode). Planned on a pipeline of 20,000 runs over 100 versions,
 * it must seek the version's runs by (pipeline, code version), not walk the pipeline's runs by
 * interval filtering on the version (an old version's page would read every newer run). On SQLite
 * a plan names its indexes; on PostgreSQL, the generic plan a prepared statement settles on,
 * after ANALYZE.
 */
const RUNS = 20_000;
const PER_VERSION = 200;
const DAY_MS = 86_400_000;

function runsSql(dialect: "sqlite" | "postgres"): string {
  const numbers = dialect === "postgres"
    ? `generate_series(0, ${RUNS - 1}) AS n(i)`
    : `(WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${RUNS - 1}) SELECT i FROM n) AS n`;
  const day = dialect === "postgres" ? "i::bigint" : "i";
  return `INSERT INTO runs (run_id, pipeline_id, interval_start, interval_end, business_date, state, trigger_kind, graph_version, params, created_at, code_version)
    SELECT 'sales@' || i, 'sales', ${day} * ${DAY_MS}, (${day} + 1) * ${DAY_MS}, 'd' || i, 'success', 'schedule', 'g', '{}', ${day} * ${DAY_MS}, 'v' || (i / ${PER_VERSION})
    FROM ${numbers}`;
}

/** SQLite plan lines that read runs other than by the pipeline and the code version. */
function sqliteUnkeyed(plan: readonly string[]): string[] {
  return plan.filter((line) => /^(SCAN|SEARCH) runs\b/.test(line) && !/\(pipeline_id=\? AND code_version=\?/.test(line));
}


/** PostgreSQL plan nodes that read runs other than by the pipeline and the code version. */
function postgresUnkeyed(root: PlanNode): string[] {
  const found: string[] = [];
  const visit = (node: PlanNode) => {
    if (node["Relation Name"] === "runs" && !/code_version = \$7/.test(node["Index Cond"] ?? "")) {
      found.push(`${node["Node Type"]}${node["Index Name"] ? ` using ${node["Index Name"]}` : ""}: ${node["Index Cond"] ?? "no condition"}`);
    }
    for (const child of node.Plans ?? []) visit(child);
  };
  visit(root);
  return found;
}

describe("the runs of one code version on a pipeline of 20,000 runs", () => {
  describe("SQLite", () => {
    let db: Database.Database;
    let dispose = () => {};
    beforeAll(async () => {
      ({ db, dispose } = await seededSqlite("idem-code-plans-", [runsSql("sqlite")]));
    });
    afterAll(() => dispose());

    const planOf = (text: string): string[] => sqlitePlan(db, text);

    it("seeks the version's runs by pipeline, code version and interval", () => {
      const plan = planOf(SQLITE_SQL.pageRunsOfCode);
      expect(plan.join(" | ")).toMatch(/SEARCH runs USING INDEX runs_by_code_version \(pipeline_id=\? AND code_version=\? AND interval_start>\? AND interval_start<\?\)/);
      expect(sqliteUnkeyed(plan), plan.join(" | ")).toEqual([]);
    });

    it("would see the filter read the pipeline's runs by interval, as SQLite plans it unless the index is named", () => {
      const unnamed = SQLITE_SQL.pageRunsOfCode.replace(/ INDEXED BY runs_by_code_version\b/, "");
      expect(unnamed).not.toBe(SQLITE_SQL.pageRunsOfCode);
      expect(sqliteUnkeyed(planOf(unnamed))).toEqual(["SEARCH runs USING INDEX runs_by_interval (pipeline_id=? AND interval_start>? AND interval_start<?)"]);
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
      await client.query(runsSql("postgres"));
      await client.query("ANALYZE runs");
      // The plan a prepared statement keeps once it stops planning per call.
      await client.query("SET plan_cache_mode = force_generic_plan");
    }, 120_000);
    afterAll(async () => {
      await client?.end();
      await dropSchema(url!, schema);
    });

    const planOf = (text: string, before?: string): Promise<PlanNode> => postgresPlanTree(client, text, before);

    it("seeks the version's runs by pipeline, code version and interval", async () => {
      const plan = await planOf(POSTGRES_SQL.pageRunsOfCode);
      expect(JSON.stringify(plan)).toContain(`"Index Name":"runs_by_code_version"`);
      expect(postgresUnkeyed(plan), JSON.stringify(plan)).toEqual([]);
    });

    it("would see the filter read every run of the pipeline without the index", async () => {
      // DDL is transactional here: the index is back when the plan's transaction rolls back.
      expect(postgresUnkeyed(await planOf(POSTGRES_SQL.pageRunsOfCode, "DROP INDEX runs_by_code_version"))).not.toEqual([]);
    });
  });
});
