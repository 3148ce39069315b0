/**
 * Merge 1,000,000 rows, 10% of them changed, into DuckDB and into PostgreSQL (when
 * IDEM_TEST_PG_URL is set): rows/s for the merge, with its counts.
 * Usage: node bin/run-ts.js bench/data/merge.ts [rows]
 */
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { mergeByKey, openDuckDB, openPostgres, type Target } from "../../src/data/index.ts";
import { bound, context, DAY, FILE_COLUMNS, scratchDir, TABLE_COLUMNS, timed, writeOrdersCsv } from "./lib/common.ts";

bound(480, "merge");
const rows = Number(process.argv[2] ?? 1_000_000);
const { dir, cleanup } = scratchDir();
const url = process.env.IDEM_TEST_PG_URL ?? process.env.IDEM_BENCH_PG_URL;
const results: Record<string, unknown> = { benchmark: "merge", rows, changed: "10%" };
try {
  const initial = join(dir, "initial.csv");
  const changed = join(dir, "changed.csv");
  await writeOrdersCsv(initial, rows);
  await writeOrdersCsv(changed, rows, 10);

  const measure = async (name: string, target: Target) => {
    const merge = (csv: string) => mergeByKey({
      target, table: "orders", columns: TABLE_COLUMNS, key: "order_id", whenMissingFromSource: "keep",
      source: { csv, columns: FILE_COLUMNS, constants: { order_date: DAY } }, context,
    });
    const first = await timed(() => merge(initial));
    const second = await timed(() => merge(changed));
    const again = await timed(() => merge(changed));
    results[name] = {
      firstLoadMs: first.ms,
      mergeMs: second.ms,
      mergeRowsPerSecond: Math.round(rows / (second.ms / 1000)),
      counts: { inserted: second.result.rowsInserted, updated: second.result.rowsUpdated, unchanged: second.result.rowsUnchanged },
      unchangedRerunMs: again.ms,
      unchangedRerunRowsPerSecond: Math.round(rows / (again.ms / 1000)),
    };
  };

  const duck = await openDuckDB(join(dir, "merge.duckdb"));
  try {
    await measure("duckdb", duck);
  } finally {
    await duck.close();
  }
  if (url) {
    const schema = `bench_${randomBytes(4).toString("hex")}`;
    const pg = await openPostgres({ url, schema });
    try {
      await measure("postgres", pg);
    } finally {
      await pg.client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => {});
      await pg.close();
    }
  } else {
    results.postgres = "skipped: set IDEM_TEST_PG_URL";
  }
  console.log(JSON.stringify(results));
} finally {
  cleanup();
}
