import { existsSync } from "node:fs";
import type { SensorCheck, TaskContext } from "../../core/pipeline/types.ts";

/** Met when the file exists; the path is usually built from the business date. */
export function fileExists(path: string | ((ctx: TaskContext<any>) => string)): SensorCheck<any> {
  return (ctx) => existsSync(typeof path === "function" ? path(ctx) : path);
}

/**
 * Met when the query returns at least one row. `query` runs it against whatever database you
 * use (a pg Pool, a DuckDB connection, ...) and returns the rows; idem does not open connections.
 */
export function sqlReturnsRow(
  query: (sql: string, params: unknown[]) => Promise<readonly unknown[]>,
  sql: string,
  params: (ctx: TaskContext<any>) => unknown[] = (ctx) => [ctx.businessDate],
): SensorCheck<any> {
  return async (ctx) => (await query(sql, params(ctx))).length > 0;
}
