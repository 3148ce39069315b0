import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";

export const DAY = "2026-09-01";
export const FILE_COLUMNS = { order_id: "bigint", customer_id: "text", amount: "decimal(12,2)", ordered_at: "timestamp" } as const;
export const TABLE_COLUMNS = { ...FILE_COLUMNS, order_date: "date" } as const;

/** Stops a benchmark that runs away, so `npm run bench` always ends. */
export function bound(seconds: number, name: string): void {
  setTimeout(() => {
    console.error(`${name}: still running after ${seconds}s, stopping`);
    process.exit(1);
  }, seconds * 1000).unref();
}

export function scratchDir(): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), "idem-bench-"));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Writes `rows` orders of one day as CSV. With `changedEvery`, every n-th order gets a different
 * amount (a 10% change is changedEvery = 10), for merge benchmarks.
 */
export async function writeOrdersCsv(path: string, rows: number, changedEvery = 0): Promise<void> {
  const instance = await DuckDBInstance.create(":memory:");
  const connection = await instance.connect();
  try {
    const amount = changedEvery > 0
      ? `CASE WHEN i % ${changedEvery} = 0 THEN ((i * 7) % 100000) / 100.0 + 1 ELSE ((i * 7) % 100000) / 100.0 END`
      : "((i * 7) % 100000) / 100.0";
    await connection.run(
      `COPY (SELECT i + 1 AS order_id, 'C' || lpad(CAST(i % 5000 AS VARCHAR), 5, '0') AS customer_id,
         CAST(${amount} AS DECIMAL(12,2)) AS amount,
         TIMESTAMP '2026-09-01 00:00:00' + to_seconds(i % 86400) AS ordered_at
       FROM range(${rows}) AS t(i)) TO $1 (HEADER)`,
      [path],
    );
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

export async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; result: T }> {
  const start = performance.now();
  const result = await fn();
  return { ms: Math.round(performance.now() - start), result };
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

export const context = { runId: "bench", pipelineId: "bench", taskId: "load", tryNumber: 1, businessDate: DAY };
