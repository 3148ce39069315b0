import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { DataError, daily, pipeline, type TaskContext } from "idem";
import { checkTable, openDuckDB, plainAppend, replaceWhere, sql, writeContextFrom, type Target } from "idem/data";
import { ORDERS_TABLE, ordersFile } from "../lib/warehouse.ts";

const shopDir = fileURLToPath(new URL("..", import.meta.url));

export interface ShopParams extends Record<string, unknown> {
  landing: string;
  warehouse: string;
  /** "replace" (the default) replaces the day; "append" shows what a plain append does on a rerun. */
  mode: "replace" | "append";
}

function fileOf(ctx: TaskContext<ShopParams>): string {
  return join(ctx.params.landing, `${ctx.businessDate}.csv`);
}

async function withWarehouse<T>(path: string, fn: (target: Target) => Promise<T>): Promise<T> {
  // DuckDB allows one writer process, so the warehouse is open only for the length of a task.
  const target = await openDuckDB(path);
  try {
    return await fn(target);
  } finally {
    await target.close();
  }
}

async function tableRows(target: Target): Promise<number> {
  return Number((await target.query(sql`SELECT count(*) AS n FROM orders_daily`))[0]?.n ?? 0);
}

/** Replaces business date D's rows (and only D's) in one transaction. */
export async function loadDay(ctx: TaskContext<ShopParams>) {
  const file = fileOf(ctx);
  // A missing file is retried: the till may still be writing it. Nothing is touched meanwhile.
  if (!existsSync(file)) throw new Error(`${ctx.businessDate}: no orders file at ${file}`);
  return withWarehouse(ctx.params.warehouse, async (target) => {
    const write = {
      target,
      table: "orders_daily",
      columns: ORDERS_TABLE,
      source: ordersFile(file, ctx.businessDate),
      context: writeContextFrom(ctx),
      // frozen dates are refused here too, not only by the scheduler
      frozen: ctx.frozen,
    };
    const result = ctx.params.mode === "append"
      ? await plainAppend(write)
      : await replaceWhere({ ...write, where: { column: "order_date", equals: ctx.businessDate } });
    const rows = await tableRows(target);
    ctx.log.info(`loaded ${result.rowsWritten} orders for ${ctx.businessDate}`, { mode: ctx.params.mode, replaced: result.rowsDeleted, tableRows: rows });
    return { rows_loaded: result.rowsWritten, rows_replaced: result.rowsDeleted, table_rows: rows, mode: ctx.params.mode };
  });
}

/** Every order in the file is in the table for D exactly once; otherwise the data is wrong. */
export async function checkDay(ctx: TaskContext<ShopParams>) {
  const file = fileOf(ctx);
  const source = ordersFile(file, ctx.businessDate);
  const day = sql`SELECT * FROM orders_daily WHERE order_date = ${ctx.businessDate}`;
  const missingOrders = sql`SELECT f.order_id FROM read_csv(${file}, header = true, all_varchar = true) AS f
    WHERE CAST(f.order_id AS BIGINT) NOT IN (SELECT d.order_id FROM (${day}) AS d)`;
  return withWarehouse(ctx.params.warehouse, async (target) => {
    const count = async (q: ReturnType<typeof sql>) => Number((await target.query(sql`SELECT count(*) AS n FROM (${q}) AS q`))[0]?.n ?? 0);
    try {
      await checkTable({
        target,
        table: "orders_daily",
        where: { column: "order_date", equals: ctx.businessDate },
        source,
        checks: [
          { rowCountEqualsSource: true },
          { uniqueKey: "order_id" },
          { custom: "every order of the file present", offending: () => missingOrders },
        ],
      });
    } catch (error) {
      if (!(error instanceof DataError)) throw error;
      // One line for the run's page, in the shop's words; the failed checks travel as details.
      const fileOrders = Number((await target.query(sql`SELECT count(*) AS n FROM read_csv(${file}, header = true, all_varchar = true)`))[0]?.n ?? 0);
      throw new DataError(`${ctx.businessDate}: ${await count(day)} rows for the file's ${fileOrders} orders, ${await count(missingOrders)} missing`, error.details);
    }
    return { orders: await count(day), missing: 0 };
  });
}

/** The shop's pipeline; tests build it over their own landing folder and warehouse. */
export function shopOrdersPipeline(params: ShopParams) {
  return pipeline(
    "shop_orders",
    {
      description: "The till's daily orders file, loaded into the warehouse for its business date.",
      owner: "data-team",
      tags: ["shop", "orders"],
      schedule: daily({ at: "02:00", timezone: "Europe/London" }),
      start: "2026-09-01",
      catchup: "all",
      defaults: { retries: 2, retryDelay: "10s", backoff: "exponential", timeout: "10m" },
      // Tills sync late and orders trickle in after the day: each night's run for D also reruns
      // the seven days before D, which is free of consequences because each run replaces its day.
      restate: { last: 7 },
      params,
      promises: [
        {
          dataset: "orders_daily",
          deadline: "D+1 06:00",
          slo: "D+1 05:30",
          timezone: "Europe/London",
          completeness: { equals: { missing: 0 } },
          owner: "finance-data",
          notify: ["log"],
        },
      ],
    },
    {
      load_day: { run: loadDay, pool: "warehouse", description: "replace D's orders in orders_daily" },
      check_day: {
        after: ["load_day"],
        run: checkDay,
        pool: "warehouse",
        publishes: "orders_daily",
        produces: ["orders_daily"],
        description: "every order of the file, once; then D is published",
      },
    },
  );
}

export const shopOrders = shopOrdersPipeline({
  landing: join(shopDir, "landing", "orders"),
  warehouse: join(shopDir, ".idem", "warehouse.duckdb"),
  mode: "replace",
});
