import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { MIGRATIONS } from "../../src/store/sqlite/migrations.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { SQL } from "../../src/store/sqlite/sql.ts";
import { describeStoreContract } from "./store-contract.ts";

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
});
