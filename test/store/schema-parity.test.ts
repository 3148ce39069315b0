import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MIGRATIONS as PG_MIGRATIONS } from "../../src/store/postgres/migrations.ts";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import { MIGRATIONS as SQLITE_MIGRATIONS } from "../../src/store/sqlite/migrations.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { dropSchema, freshSchema, queryPg, testPostgresUrl } from "../process/postgres-support.ts";

const url = testPostgresUrl();

/**
 * Where the schemas differ on purpose, and why. Anything else that differs fails the test: a
 * migration added to one adapter and not the other, a column renamed on one side, a live-state
 * index forgotten.
 */
const ONLY_POSTGRES = {
  columns: [] as string[],
  // Pages by creation time, which SQLite serves from its rowid order; and two partial indexes
  // that SQLite's migration 21 dropped: no SQLite statement read live-by-run (the run's
  // live_tasks count answers), and its one index of running rows serves pools and caps both.
  indexes: ["runs_by_created", "backfills_by_created", "task_instances_live_by_run", "task_instances_running_run"],
};

interface Schema {
  /** table -> sorted column names */
  columns: Map<string, string[]>;
  /** partial indexes (live states): name -> "table(predicate columns)" */
  liveIndexes: Map<string, string>;
  indexes: Set<string>;
  /** unique constraints: "table(columns)" */
  unique: string[];
  versions: number[];
}

function sqliteSchema(path: string): Schema {
  const store = new SqliteStore(path);
  try {
    const db = store.db;
    const applied = (db.prepare("SELECT version FROM schema_migrations ORDER BY version").all() as { version: number }[]).map((r) => r.version);
    const tables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").all() as { name: string }[]).map((r) => r.name);
    const columns = new Map(tables.map((t) => [t, (db.prepare("SELECT name FROM pragma_table_info(?)").all(t) as { name: string }[]).map((c) => c.name).sort()]));
    const indexRows = db.prepare("SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL").all() as { name: string; tbl_name: string; sql: string }[];
    const liveIndexes = new Map(
      indexRows.filter((i) => / WHERE /i.test(i.sql)).map((i) => [i.name, `${i.tbl_name}(${predicateColumns(i.sql.split(/ WHERE /i)[1]!, columns.get(i.tbl_name)!)})`]),
    );
    const unique = tables.flatMap((t) =>
      (db.prepare("SELECT name FROM pragma_index_list(?) WHERE origin = 'u'").all(t) as { name: string }[]).map(
        (i) => `${t}(${(db.prepare("SELECT name FROM pragma_index_info(?) ORDER BY seqno").all(i.name) as { name: string }[]).map((c) => c.name).join(",")})`,
      ),
    );
    return { columns, liveIndexes, indexes: new Set(indexRows.map((i) => i.name)), unique: unique.sort(), versions: applied };
  } finally {
    store.db.close();
  }
}

async function postgresSchema(schema: string): Promise<Schema> {
  const applied = (await queryPg<{ version: number }>(url!, schema, "SELECT version FROM schema_migrations ORDER BY version")).map((r) => Number(r.version));
  const columnRows = await queryPg<{ table_name: string; column_name: string }>(
    url!, schema, "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = $1", [schema],
  );
  const columns = new Map<string, string[]>();
  for (const r of columnRows) columns.set(r.table_name, [...(columns.get(r.table_name) ?? []), r.column_name].sort());
  const indexRows = await queryPg<{ indexname: string; tablename: string; indexdef: string }>(
    url!, schema, "SELECT indexname, tablename, indexdef FROM pg_indexes WHERE schemaname = $1 AND indexname NOT LIKE '%_pkey'", [schema],
  );
  const liveIndexes = new Map(
    indexRows.filter((i) => / WHERE /.test(i.indexdef)).map((i) => [i.indexname, `${i.tablename}(${predicateColumns(i.indexdef.split(" WHERE ")[1]!, columns.get(i.tablename)!)})`]),
  );
  const constraints = indexRows.filter((i) => i.indexname.endsWith("_key"));
  const unique = constraints.map((i) => `${i.tablename}(${/\((.*)\)$/.exec(i.indexdef)![1]!.split(", ").join(",")})`).sort();
  const named = indexRows.filter((i) => !i.indexname.endsWith("_key")).map((i) => i.indexname);
  return { columns, liveIndexes, indexes: new Set(named), unique, versions: applied };
}

/** The columns a partial index's predicate names, whatever each database's spelling of it. */
function predicateColumns(predicate: string, tableColumns: readonly string[]): string {
  return tableColumns.filter((c) => new RegExp(`\\b${c}\\b`).test(predicate)).join(",");
}

describe.skipIf(!url)("the two stores' schemas", () => {
  let dir: string;
  let schema: string;
  let sqlite: Schema;
  let postgres: Schema;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "idem-parity-"));
    const path = join(dir, "state.db");
    const s = new SqliteStore(path);
    await s.migrate();
    await s.close();
    sqlite = sqliteSchema(path);
    schema = freshSchema();
    const p = new PostgresStore({ connectionString: url!, schema });
    await p.migrate();
    await p.close();
    postgres = await postgresSchema(schema);
  });

  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    if (schema) await dropSchema(url!, schema);
  });

  it("apply numbered migrations, each adapter all of its own, and agree on the versions they share from 6 on", () => {
    expect(sqlite.versions).toEqual(SQLITE_MIGRATIONS.map((m) => m.version));
    expect(postgres.versions).toEqual(PG_MIGRATIONS.map((m) => m.version));
    for (const list of [SQLITE_MIGRATIONS, PG_MIGRATIONS]) expect(list.map((m) => m.version)).toEqual([...list.map((m) => m.version)].sort((a, b) => a - b));
    // PostgreSQL's version 1 is SQLite's 1-5 at once (it came later); every step since is numbered alike on both.
    expect(postgres.versions.filter((v) => v > 5)).toEqual(sqlite.versions.filter((v) => v > 5));
  });

  it("have the same tables with the same columns", () => {
    expect([...postgres.columns.keys()].sort()).toEqual([...sqlite.columns.keys()].sort());
    for (const [table, columns] of sqlite.columns) {
      const pg = postgres.columns.get(table)!.filter((c) => !ONLY_POSTGRES.columns.includes(`${table}.${c}`));
      expect(pg, `columns of ${table}`).toEqual(columns);
    }
  });

  it("have the same live-state (partial) indexes, over the same columns, and the same other indexes", () => {
    const pgLive = [...postgres.liveIndexes].filter(([name]) => !ONLY_POSTGRES.indexes.includes(name));
    expect(Object.fromEntries(pgLive)).toEqual(Object.fromEntries(sqlite.liveIndexes));
    const pgIndexes = [...postgres.indexes].filter((i) => !ONLY_POSTGRES.indexes.includes(i)).sort();
    const sqliteIndexes = [...sqlite.indexes].filter((i) => !i.startsWith("sqlite_autoindex")).sort();
    expect(pgIndexes).toEqual(sqliteIndexes);
  });

  it("have the same unique constraints (one run per pipeline and interval, one alert per incident event and notifier, ...)", () => {
    expect(postgres.unique).toEqual(sqlite.unique);
    expect(sqlite.unique).toContain("runs(pipeline_id,interval_start,interval_end)");
  });
});
