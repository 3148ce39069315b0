import { existsSync } from "node:fs";
import { ArgumentError } from "../core/model/errors.ts";
import { isPostgresUrl, sqlitePath } from "./location.ts";
import { PostgresStore } from "./postgres/postgres-store.ts";
import { SESSION_SQL, STATE_COPY } from "./postgres/sql.ts";
import { SqliteStore } from "./sqlite/sqlite-store.ts";

export interface MigrateStateOptions {
  /** A SQLite state file: `sqlite:.idem/state.db` or a path. */
  from: string;
  /** A PostgreSQL URL, optionally with ?schema=name. */
  to: string;
  /** Replace whatever state the target holds. */
  force?: boolean;
  log?: (line: string) => void;
}

/** Rows per INSERT: well under PostgreSQL's 65,535 parameters for the widest table. */
const BATCH_ROWS = 1_000;

/**
 * Moves an installation's history from its SQLite state file to PostgreSQL: runs, task
 * instances, attempts, graph versions and edges, the audit log, pipelines' pause state and
 * schedule cursors, skipped intervals, pools, dataset events and waits, backfills, freshness,
 * incidents and alerts. One transaction on the target: it gets all of it or nothing.
 * A target that already holds state is refused unless `force`, which replaces it.
 * Returns the rows copied per table.
 */
export async function migrateState(options: MigrateStateOptions): Promise<Map<string, number>> {
  if (isPostgresUrl(options.from)) throw new ArgumentError("from", (n) => `${n("from")}: only a SQLite state file can be moved (sqlite:<path>)`);
  if (!isPostgresUrl(options.to)) throw new ArgumentError("to", (n) => `${n("to")}: expected a postgres:// URL`);
  const path = sqlitePath(options.from);
  if (!existsSync(path)) throw new ArgumentError("from", (n) => `${n("from")} ${options.from}: no such file`);

  const source = new SqliteStore(path);
  const target = new PostgresStore({ connectionString: options.to, applicationName: "idem:migrate" });
  const copied = new Map<string, number>();
  try {
    // Both at the newest schema, so their columns line up.
    await source.migrate();
    await target.migrate();
    const client = await target.pool.connect();
    try {
      await client.query(SESSION_SQL.begin);
      await client.query(STATE_COPY.quietFeed);
      const columns = new Map<string, { name: string; type: string }[]>();
      for (const c of (await client.query(STATE_COPY.targetColumns)).rows) {
        if (!columns.has(c.table_name)) columns.set(c.table_name, []);
        columns.get(c.table_name)!.push({ name: c.column_name, type: c.data_type });
      }
      const held: string[] = [];
      for (const table of STATE_COPY.cleared) {
        if (Number((await client.query(STATE_COPY.targetRowCount(table))).rows[0].n) > 0) held.push(table);
      }
      if (held.length > 0 && !options.force) {
        throw new ArgumentError("force", (n) => `the target already holds state (${held.join(", ")}); add ${n("force")} to replace it`);
      }
      if (held.length > 0) await client.query(STATE_COPY.clear(STATE_COPY.cleared));

      for (const table of STATE_COPY.tables) {
        if (!source.db.prepare(STATE_COPY.sourceHasTable).get(table)) continue;
        const statement = source.db.prepare(STATE_COPY.sourceRows(table));
        const sourceColumns = new Set(statement.columns().map((c) => c.name));
        const wanted = (columns.get(table) ?? [])
          .filter((c) => sourceColumns.has(c.name))
          .map((c) => ({ name: c.name, type: c.type, cast: c.type === "jsonb" ? "::jsonb" : "" }));
        let batch: unknown[][] = [];
        let count = 0;
        const flush = async () => {
          if (batch.length === 0) return;
          await client.query(STATE_COPY.insert(table, wanted, batch.length), batch.flat());
          count += batch.length;
          batch = [];
        };
        for (const row of statement.iterate() as Iterable<Record<string, unknown>>) {
          batch.push(wanted.map((c) => convert(row[c.name], c.type)));
          if (batch.length >= BATCH_ROWS) await flush();
        }
        await flush();
        copied.set(table, count);
        options.log?.(`${table}: ${count}`);
      }
      for (const { table, column } of STATE_COPY.identities) await client.query(STATE_COPY.advanceIdentity(table, column));
      await client.query(SESSION_SQL.commit);
      client.release();
    } catch (error) {
      await client.query(SESSION_SQL.rollback).catch(() => {});
      client.release();
      throw error;
    }
  } finally {
    await source.close();
    await target.close();
  }
  return copied;
}

/** SQLite keeps booleans as 0/1 and JSON as text; PostgreSQL takes booleans and JSON text. */
function convert(value: unknown, type: string): unknown {
  if (value === null || value === undefined) return null;
  if (type === "boolean") return value === 1 || value === true || value === "1";
  if (typeof value === "bigint") return value.toString();
  return value;
}
