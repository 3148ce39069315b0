import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { shopOrders } from "../../examples/shop/pipelines/shop_orders.ts";
import { FakeClock } from "../../src/testing.ts";
import { openTestEngine, type TestEngine } from "../support/engine.ts";

const fixtures = resolve(import.meta.dirname, "../../examples/shop/landing/orders");
let t: TestEngine;
let params: { landing: string; warehouse: string };

beforeEach(async () => {
  t = await openTestEngine([shopOrders], new FakeClock("2026-10-01T02:00:00Z"));
  await t.engine.setPool("warehouse", 1);
  params = { landing: join(t.dir, "landing"), warehouse: join(t.dir, "warehouse.duckdb") };
  mkdirSync(params.landing);
  for (const day of ["2026-09-01", "2026-09-02"]) copyFileSync(join(fixtures, `${day}.csv`), join(params.landing, `${day}.csv`));
});
afterEach(async () => t.close());

async function query(sql: string): Promise<unknown[][]> {
  const db = await DuckDBInstance.create(params.warehouse);
  const connection = await db.connect();
  try {
    return (await connection.runAndReadAll(sql)).getRows().map((r) => r.map((v) => (typeof v === "bigint" ? Number(v) : v)));
  } finally {
    connection.closeSync();
    db.closeSync();
  }
}

const run = (date: string, extra: Record<string, unknown> = {}) =>
  t.engine.runForDate("shop_orders", date, { params: { ...params, ...extra } });

describe("the shop's orders pipeline", () => {
  it("loads a day, and running it again changes nothing", async () => {
    await run("2026-09-01");
    await run("2026-09-02");
    const again = await run("2026-09-01");
    expect(again.run.state).toBe("success");
    expect(await query("SELECT order_date::VARCHAR, count(*) FROM orders_daily GROUP BY 1 ORDER BY 1")).toEqual([
      ["2026-09-01", 3],
      ["2026-09-02", 5],
    ]);
  });

  it("shows that a plain append doubles the day, fails the check, and a normal rerun repairs it", async () => {
    await run("2026-09-01");
    const appended = await run("2026-09-01", { mode: "append" });
    expect(appended.run.state).toBe("failed");
    const [check] = (await t.store.listAttempts("shop_orders@2026-09-01", "check_day")).slice(-1);
    expect(check).toMatchObject({ errorClass: "DataError", errorMessage: "2026-09-01: 6 rows for the file's 3 orders, 0 missing" });
    const repaired = await run("2026-09-01");
    expect(repaired.run.state).toBe("success");
    expect(await query("SELECT count(*) FROM orders_daily")).toEqual([[3]]);
  });

  it("fails when the day's file is missing and writes nothing", async () => {
    await run("2026-09-01");
    const missing = await t.engine.runForDate("shop_orders", "2026-09-03", { params });
    expect(missing.run.state).toBe("failed");
    const attempts = await t.store.listAttempts("shop_orders@2026-09-03", "load_day");
    expect(attempts.at(-1)!.errorMessage).toMatch(/2026-09-03: no orders file at .*2026-09-03\.csv/);
    expect(missing.tasks.map((x) => x.state)).toEqual(["failed", "upstream_failed"]);
    expect(await query("SELECT order_date::VARCHAR, count(*) FROM orders_daily GROUP BY 1")).toEqual([["2026-09-01", 3]]);
  });

  it("replaces a day with no rows when the file has only its header", async () => {
    await run("2026-09-01");
    writeFileSync(join(params.landing, "2026-09-01.csv"), "order_id,customer_id,amount,ordered_at\n");
    const empty = await run("2026-09-01");
    expect(empty.run.state).toBe("success");
    expect(await query("SELECT count(*) FROM orders_daily")).toEqual([[0]]);
  });
});
