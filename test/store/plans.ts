import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import type pg from "pg";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";

/** One node of PostgreSQL's `EXPLAIN (FORMAT JSON)` tree, as far as the plan tests read it. */
export interface PlanNode { "Node Type": string; "Relation Name"?: string; "Index Name"?: string; "Index Cond"?: string; Plans?: PlanNode[] }

/** SQLite's plan of a store statement, its parameters bound to null (named or positional). */
export function sqlitePlan(db: Database.Database, text: string): string[] {
  const statement = db.prepare(`EXPLAIN QUERY PLAN ${text}`);
  const named = [...new Set([...text.matchAll(/[@:$]([A-Za-z_]\w*)/g)].map((m) => m[1]!))];
  const params = named.length ? [Object.fromEntries(named.map((k) => [k, null]))] : Array(text.split("?").length - 1).fill(null);
  return (statement.all(...params) as { detail: string }[]).map((row) => row.detail);
}

/**
 * PostgreSQL's plan of a store statement as a prepared statement settles on it (the store prepares
 * its statements), inside a transaction that is rolled back; `before` runs first in it.
 */
export async function postgresPlanTree(client: pg.Client, text: string, before?: string): Promise<PlanNode> {
  const params = Math.max(0, ...[...text.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])));
  await client.query("BEGIN");
  try {
    if (before) await client.query(before);
    await client.query(`PREPARE hot AS ${text}`);
    const args = params ? `(${Array(params).fill("NULL").join(", ")})` : "";
    const { rows } = await client.query(`EXPLAIN (FORMAT JSON) EXECUTE hot${args}`);
    return (rows[0]["QUERY PLAN"] as { Plan: PlanNode }[])[0]!.Plan;
  } finally {
    await client.query("ROLLBACK");
    await client.query("DEALLOCATE ALL");
  }
}

/** A migrated SQLite state file in a temporary directory, filled by `statements` in one transaction. */
export async function seededSqlite(prefix: string, statements: string[]): Promise<{ db: Database.Database; dispose: () => void }> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const store = new SqliteStore(join(dir, "state.db"));
  await store.migrate();
  await store.close();
  const db = new Database(join(dir, "state.db"));
  db.transaction(() => {
    for (const statement of statements) db.exec(statement);
  })();
  return { db, dispose: () => { db.close(); rmSync(dir, { recursive: true, force: true }); } };
}
