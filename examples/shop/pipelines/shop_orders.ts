import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { DataError, daily, pipeline, type TaskContext } from "idem";
import { READ_ORDERS, withWarehouse } from "../lib/warehouse.ts";

const shopDir = fileURLToPath(new URL("..", import.meta.url));

export interface ShopParams extends Record<string, unknown> {
  landing: string;
  warehouse: string;
  /** "replace" (the default) replaces the day; "append" shows what a plain append does on a rerun. */
  mode: "replace" | "append";
}

function ordersFile(ctx: TaskContext<ShopParams>): string {
  return join(ctx.params.landing, `${ctx.businessDate}.csv`);
}

/** Replaces business date D's rows (and only D's) in one transaction. */
export async function loadDay(ctx: TaskContext<ShopParams>) {
  const file = ordersFile(ctx);
  // A missing file is retried: the till may still be writing it. Nothing is touched meanwhile.
  if (!existsSync(file)) throw new Error(`${ctx.businessDate}: no orders file at ${file}`);
  return withWarehouse(ctx.params.warehouse, async (db) => {
    await db.run(`CREATE TABLE IF NOT EXISTS orders_daily (
      order_id BIGINT, customer_id VARCHAR, amount DECIMAL(12,2), ordered_at TIMESTAMP, order_date DATE NOT NULL)`);
    await db.run("BEGIN TRANSACTION");
    try {
      if (ctx.params.mode !== "append") {
        await db.run("DELETE FROM orders_daily WHERE order_date = $date::DATE", { date: ctx.businessDate });
      }
      await db.run(`INSERT INTO orders_daily SELECT *, $date::DATE FROM ${READ_ORDERS}`, { file, date: ctx.businessDate });
      await db.run("COMMIT");
    } catch (error) {
      await db.run("ROLLBACK");
      throw error;
    }
    const rowsLoaded = await scalar(db, `SELECT count(*) FROM ${READ_ORDERS}`, { file });
    const tableRows = await scalar(db, "SELECT count(*) FROM orders_daily");
    ctx.log.info(`loaded ${rowsLoaded} orders for ${ctx.businessDate}`, { mode: ctx.params.mode, tableRows });
    return { rows_loaded: rowsLoaded, table_rows: tableRows, mode: ctx.params.mode };
  });
}

/** Every order in the file is in the table for D exactly once; otherwise the data is wrong. */
export async function checkDay(ctx: TaskContext<ShopParams>) {
  const file = ordersFile(ctx);
  return withWarehouse(ctx.params.warehouse, async (db) => {
    const fileOrders = await scalar(db, `SELECT count(*) FROM ${READ_ORDERS}`, { file });
    const tableRows = await scalar(db, "SELECT count(*) FROM orders_daily WHERE order_date = $date::DATE", { date: ctx.businessDate });
    const missing = await scalar(
      db,
      `SELECT count(*) FROM ${READ_ORDERS} f
       WHERE f.order_id NOT IN (SELECT order_id FROM orders_daily WHERE order_date = $date::DATE)`,
      { file, date: ctx.businessDate },
    );
    if (tableRows !== fileOrders || missing > 0) {
      throw new DataError(`${ctx.businessDate}: ${tableRows} rows for the file's ${fileOrders} orders, ${missing} missing`);
    }
    return { orders: fileOrders };
  });
}

async function scalar(db: Parameters<Parameters<typeof withWarehouse>[1]>[0], sql: string, values?: Record<string, string>) {
  const reader = await db.runAndReadAll(sql, values);
  return Number(reader.getRows()[0]![0]);
}

export const shopOrders = pipeline(
  "shop_orders",
  {
    description: "The till's daily orders file, loaded into the warehouse for its business date.",
    owner: "data-team",
    tags: ["shop", "orders"],
    schedule: daily({ at: "02:00", timezone: "Europe/London" }),
    start: "2026-09-01",
    catchup: "all",
    defaults: { retries: 2, retryDelay: "10s", backoff: "exponential", timeout: "10m" },
    params: {
      landing: join(shopDir, "landing", "orders"),
      warehouse: join(shopDir, ".idem", "warehouse.duckdb"),
      mode: "replace",
    } as ShopParams,
  },
  {
    load_day: { run: loadDay, description: "replace D's orders in orders_daily" },
    check_day: { after: ["load_day"], run: checkDay, description: "every order of the file, once" },
  },
);
