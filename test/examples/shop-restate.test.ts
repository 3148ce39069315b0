import { appendFileSync, copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it, onTestFinished } from "vitest";
import { shopOrdersPipeline } from "../../examples/shop/pipelines/shop_orders.ts";
import { addDays } from "../../src/core/time/dates.ts";
import { openDuckDB, sql, tableContentHash } from "../../src/data/index.ts";
import { ScheduleHarness } from "../support/scheduling.ts";

const fixtures = resolve(import.meta.dirname, "../../examples/shop/landing/orders");
let h: ScheduleHarness;
afterEach(async () => h?.close());

async function inWarehouse<T>(path: string, fn: (w: Awaited<ReturnType<typeof openDuckDB>>) => Promise<T>): Promise<T> {
  const warehouse = await openDuckDB(path);
  try {
    return await fn(warehouse);
  } finally {
    await warehouse.close();
  }
}

describe("the shop restating its last seven days", () => {
  it("picks up orders that reach the till's file three days late, and ends as one clean load of the final files", async () => {
    const landing = mkdtempSync(join(tmpdir(), "idem-shop-landing-"));
    onTestFinished(() => rmSync(landing, { recursive: true, force: true }));
    const warehouse = join(landing, "warehouse.duckdb");
    const shop = shopOrdersPipeline({ landing, warehouse, mode: "replace" });
    h = await ScheduleHarness.open([shop], "2026-09-01T00:00:00Z");
    await h.engine.setPool("warehouse", 1);
    const dayOrders = async (date: string) =>
      inWarehouse(warehouse, async (w) => Number((await w.query(sql`SELECT count(*) AS n FROM orders_daily WHERE order_date = ${date}`))[0]!.n));

    for (let n = 0; n < 7; n++) {
      const date = addDays("2026-09-01", n);
      copyFileSync(join(fixtures, `${date}.csv`), join(landing, `${date}.csv`)); // the till writes the day's file at closing
      if (date === "2026-09-06") {
        // a till that was offline syncs two orders of 3 September
        appendFileSync(join(landing, "2026-09-03.csv"), "9001,C09,12.50,2026-09-03T21:40:00\r\n9002,C01,7.25,2026-09-03T22:05:00\r\n");
      }
      await h.at(`${addDays(date, 1)}T01:00:00Z`); // 02:00 London: D runs, then the seven days before it
      if (date === "2026-09-05") expect(await dayOrders("2026-09-03")).toBe(fileOrders(landing, "2026-09-03"));
    }
    const fileCount = fileOrders(landing, "2026-09-03");
    expect(await dayOrders("2026-09-03")).toBe(fileCount);
    expect(fileCount).toBe(fileOrders(fixtures, "2026-09-03") + 2);

    const run = (await h.store.getRun("shop_orders@2026-09-03"))!;
    expect(run).toMatchObject({ state: "success", trigger: "restate", restateCount: 4 });
    const published = await h.store.freshnessHistory("orders_daily", "2026-09-03");
    expect(published.map((p) => [p.trigger, (p.summary as { orders: number }).orders])).toEqual([
      ["schedule", fileCount - 2], ["restate", fileCount - 2], ["restate", fileCount - 2], ["restate", fileCount], ["restate", fileCount],
    ]);
    expect((await h.store.listIncidents({})).filter((i) => i.kind !== "did_not_run")).toEqual([]);

    // the warehouse now holds what one clean load of the final files gives
    const clean = join(landing, "clean.duckdb");
    const cleanShop = shopOrdersPipeline({ landing, warehouse: clean, mode: "replace" });
    await h.close();
    h = await ScheduleHarness.open([cleanShop], "2026-09-08T02:00:00Z");
    await h.engine.setPool("warehouse", 1);
    for (let n = 0; n < 7; n++) await h.engine.runForDate("shop_orders", addDays("2026-09-01", n), { actor: "test" });
    const hash = (path: string) => inWarehouse(path, (w) => tableContentHash(w, "orders_daily"));
    expect(await hash(warehouse)).toBe(await hash(clean));
  });
});

function fileOrders(folder: string, date: string): number {
  return readFileSync(join(folder, `${date}.csv`), "utf8").trim().split("\n").length - 1;
}
