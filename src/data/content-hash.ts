import { createHash } from "node:crypto";
import { ident, sql } from "./sql.ts";
import type { Target } from "./target.ts";

/**
 * A hash of a table's rows that ignores their physical order: equal for two tables holding the
 * same rows. The crash harness compares a killed-then-rerun target with a clean run by it.
 */
export async function tableContentHash(target: Target, table: string): Promise<string> {
  if ((await target.tableColumns(table)) === null) return "absent";
  const rows = await target.query(sql`SELECT * FROM ${ident(table)}`);
  return hashRows(rows);
}

export function hashRows(rows: readonly Record<string, unknown>[]): string {
  const lines = rows.map((row) => JSON.stringify(Object.keys(row).sort().map((k) => [k, canonical(row[k])]))).sort();
  const hash = createHash("sha256");
  for (const line of lines) hash.update(line).update("\n");
  return `${rows.length}:${hash.digest("hex").slice(0, 16)}`;
}

function canonical(value: unknown): unknown {
  if (typeof value === "bigint") return value.toString();
  if (typeof value === "number") return Number.isInteger(value) ? String(value) : String(Number(value.toPrecision(15)));
  if (value instanceof Date) return value.toISOString();
  return value;
}
