/**
 * PostgreSQL replace-where of 1,000,000 rows from CSV, side by side with PostgreSQL's own COPY
 * (psql \copy) of the same file into an empty table. Target: <= 1.5x.
 * Usage: IDEM_TEST_PG_URL=postgres://... node bin/run-ts.js bench/data/replace-postgres.ts [rows]
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import pg from "pg";
import { ident, openPostgres, replaceWhere, sql } from "../../src/data/index.ts";
import { bound, context, DAY, FILE_COLUMNS, median, scratchDir, TABLE_COLUMNS, timed, writeOrdersCsv } from "./lib/common.ts";

bound(480, "replace-postgres");
const url = process.env.IDEM_TEST_PG_URL ?? process.env.IDEM_BENCH_PG_URL;
if (!url) {
  console.log(JSON.stringify({ benchmark: "replace-postgres", skipped: "set IDEM_TEST_PG_URL to a PostgreSQL server" }));
  process.exit(0);
}
const rows = Number(process.argv[2] ?? 1_000_000);
const rounds = 3;
const schema = `bench_${randomBytes(4).toString("hex")}`;
const { dir, cleanup } = scratchDir();
const admin = new pg.Client({ connectionString: url });
await admin.connect();
try {
  const csv = join(dir, "orders.csv");
  await writeOrdersCsv(csv, rows);
  await admin.query(`CREATE SCHEMA ${schema}`);

  const copy: number[] = [];
  const firstLoad: number[] = [];
  const rerun: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const table = `copy_${round}`;
    await admin.query(`CREATE TABLE ${schema}.${table} (order_id bigint, customer_id text, amount numeric(12,2), ordered_at timestamp)`);
    copy.push((await timed(async () => {
      execFileSync("psql", [url, "-v", "ON_ERROR_STOP=1", "-q", "-c", `\\copy ${schema}.${table} FROM '${csv}' WITH (FORMAT csv, HEADER true)`], { stdio: "inherit" });
    })).ms);

    const target = await openPostgres({ url, schema });
    const load = () => replaceWhere({
      target, table: `orders_${round}`, columns: TABLE_COLUMNS, where: { column: "order_date", equals: DAY },
      source: { csv, columns: FILE_COLUMNS, constants: { order_date: DAY } }, context,
    });
    firstLoad.push((await timed(load)).ms);
    rerun.push((await timed(load)).ms);
    const count = Number((await target.query(sql`SELECT count(*) AS n FROM ${ident(`orders_${round}`)}`))[0]?.n);
    if (count !== rows) throw new Error(`expected ${rows} rows, found ${count}`);
    await target.close();
  }
  const base = median(copy);
  console.log(JSON.stringify({
    benchmark: "replace-postgres",
    rows,
    postgresCopyMs: base,
    replaceWhereFirstLoadMs: median(firstLoad),
    replaceWhereRerunMs: median(rerun),
    firstLoadRatio: Number((median(firstLoad) / base).toFixed(2)),
    rerunRatio: Number((median(rerun) / base).toFixed(2)),
    target: "<= 1.5",
    samples: { copy, firstLoad, rerun },
  }));
} finally {
  await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => {});
  await admin.end();
  cleanup();
}

