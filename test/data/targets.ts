import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll } from "vitest";
import { openDuckDB, openPostgres, openSQLite, sql, type Target } from "../../src/data/index.ts";
import { freshSchema, postgresUrl } from "./pg.ts";

export interface TargetKind {
  name: "duckdb" | "sqlite" | "postgres";
  /** A fresh, empty target. */
  open(): Promise<Target>;
  skip: string | null;
}

const pgServer = postgresUrl();

/** The three SQL targets, each opened in a fresh temp dir or schema per call. */
export function targetKinds(): TargetKind[] {
  return [
    { name: "duckdb", skip: null, open: async () => openDuckDB(join(tempDir(), "warehouse.duckdb")) },
    { name: "sqlite", skip: null, open: async () => openSQLite(join(tempDir(), "warehouse.sqlite")) },
    {
      name: "postgres",
      skip: pgServer.url ? null : pgServer.reason,
      open: async () => openPostgres({ url: pgServer.url!, schema: freshSchema() }),
    },
  ];
}

const dirs: string[] = [];
export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "idem-data-"));
  dirs.push(dir);
  return dir;
}

export function cleanTempDirs(): void {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/** Drops the test schemas a PostgreSQL target created. */
export async function dropSchema(target: Target): Promise<void> {
  if (target.dialect !== "postgres" || !pgServer.url) return;
  const rows = await target.query(sql`SELECT current_schema() AS s`);
  const schema = String(rows[0]?.s ?? "");
  if (!schema.startsWith("t_")) return;
  const client = new pg.Client({ connectionString: pgServer.url });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await client.end();
}

/**
 * Opens fresh targets of one kind for a describe block, each closed (and its schema dropped)
 * after the block.
 */
export function targetsOf(kind: TargetKind): () => Promise<Target> {
  const opened: Target[] = [];
  afterAll(async () => {
    for (const t of opened) {
      await dropSchema(t);
      await t.close();
    }
  });
  return async () => {
    const t = await kind.open();
    opened.push(t);
    return t;
  };
}
