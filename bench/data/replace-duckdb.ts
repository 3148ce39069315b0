/**
 * Replace one day of 1,000,000 rows from CSV into DuckDB with replaceWhere, side by side with
 * DuckDB's own `INSERT INTO t SELECT * FROM read_csv(...)` of the same file. Target: <= 1.3x.
 * Usage: node bin/run-ts.js bench/data/replace-duckdb.ts [rows]
 */
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { openDuckDB, replaceWhere, sql } from "../../src/data/index.ts";
import { bound, context, DAY, FILE_COLUMNS, median, scratchDir, TABLE_COLUMNS, timed, writeOrdersCsv } from "./lib/common.ts";

bound(300, "replace-duckdb");
const rows = Number(process.argv[2] ?? 1_000_000);
const rounds = 3;
const { dir, cleanup } = scratchDir();
try {
  const csv = join(dir, "orders.csv");
  await writeOrdersCsv(csv, rows);

  const baseline: number[] = [];
  const firstLoad: number[] = [];
  const rerun: number[] = [];
  for (let round = 0; round < rounds; round++) {
    // DuckDB's own load: a fresh database, one statement.
    const instance = await DuckDBInstance.create(join(dir, `base-${round}.duckdb`));
    const connection = await instance.connect();
    await connection.run("CREATE TABLE orders (order_id BIGINT, customer_id VARCHAR, amount DECIMAL(12,2), ordered_at TIMESTAMP)");
    baseline.push((await timed(() => connection.run("INSERT INTO orders SELECT * FROM read_csv($1)", [csv]))).ms);
    connection.closeSync();
    instance.closeSync();

    // replaceWhere: declared types, the day's constant column, predicate check, history.
    const target = await openDuckDB(join(dir, `idem-${round}.duckdb`));
    const load = () => replaceWhere({
      target, table: "orders", columns: TABLE_COLUMNS, where: { column: "order_date", equals: DAY },
      source: { csv, columns: FILE_COLUMNS, constants: { order_date: DAY } }, context,
    });
    firstLoad.push((await timed(load)).ms);
    rerun.push((await timed(load)).ms);
    const count = Number((await target.query(sql`SELECT count(*) AS n FROM orders`))[0]?.n);
    if (count !== rows) throw new Error(`expected ${rows} rows, found ${count}`);
    await target.close();
  }
  const base = median(baseline);
  console.log(JSON.stringify({
    benchmark: "replace-duckdb",
    rows,
    duckdbInsertSelectMs: base,
    replaceWhereFirstLoadMs: median(firstLoad),
    replaceWhereRerunMs: median(rerun),
    firstLoadRatio: Number((median(firstLoad) / base).toFixed(2)),
    rerunRatio: Number((median(rerun) / base).toFixed(2)),
    target: "<= 1.3",
    samples: { baseline, firstLoad, rerun },
  }));
} finally {
  cleanup();
}
