import { cpSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { landedFilesPipeline } from "../../examples/landed_files/pipelines/landed_files.ts";
import { openDuckDB, readHistory, sql, tableContentHash } from "../../src/data/index.ts";
import { FakeClock } from "../../src/testing.ts";
import { openTestEngine, type TestEngine } from "../support/engine.ts";

const fixtures = resolve(import.meta.dirname, "../../examples/landed_files/landing");
let t: TestEngine;
let params: { landing: string; warehouse: string };

beforeEach(async () => {
  params = { landing: "", warehouse: "" };
  t = await openTestEngine([landedFilesPipeline(params)], new FakeClock("2026-09-03T02:00:00Z"));
  await t.engine.setPool("warehouse", 1);
  params.landing = join(t.dir, "landing");
  params.warehouse = join(t.dir, "warehouse.duckdb");
  cpSync(fixtures, params.landing, { recursive: true });
});
afterEach(async () => t.close());

async function inWarehouse<T>(fn: (target: Awaited<ReturnType<typeof openDuckDB>>) => Promise<T>): Promise<T> {
  const target = await openDuckDB(params.warehouse);
  try {
    return await fn(target);
  } finally {
    await target.close();
  }
}

const rows = () => inWarehouse(async (target) =>
  (await target.query(sql`SELECT CAST(landed_on AS VARCHAR) AS d, file, order_id, amount FROM landed_orders ORDER BY d, file, order_id`))
    .map((r) => [r.d, r.file, Number(r.order_id), Number(r.amount)]));

describe("the landed-files example: one mapped instance per file, each loaded by its key", () => {
  it("loads every file of a day as its own key; a rerun is byte-identical; a file landed again replaces only its rows", async () => {
    const first = await t.engine.runForDate("landed_files", "2026-09-01");
    expect(first.run.state).toBe("success");
    expect(Object.fromEntries(first.tasks.map((x) => [x.taskId, x.state]))).toEqual({
      list_files: "success", load_file: "success", "load_file[north.csv]": "success", "load_file[south.csv]": "success", report: "success",
    });
    expect((await t.store.listAttempts("landed_files@2026-09-01", "report"))[0]!.summary).toEqual({ files: 2, rows: 3 });
    await t.engine.runForDate("landed_files", "2026-09-02");
    const loaded = [
      ["2026-09-01", "north.csv", 1, 10.5], ["2026-09-01", "north.csv", 2, 20.25], ["2026-09-01", "south.csv", 3, 7],
      ["2026-09-02", "north.csv", 4, 12], ["2026-09-02", "north.csv", 5, 3.4], ["2026-09-02", "north.csv", 6, 8.1],
    ];
    expect(await rows()).toEqual(loaded);

    const hash = await inWarehouse((target) => tableContentHash(target, "landed_orders"));
    const again = await t.engine.runForDate("landed_files", "2026-09-01");
    expect(again.run.state).toBe("success");
    expect(await inWarehouse((target) => tableContentHash(target, "landed_orders"))).toBe(hash);

    // south.csv lands again with other rows: its rerun replaces south's rows of that day alone.
    writeFileSync(join(params.landing, "2026-09-01", "south.csv"), "order_id,amount\n7,1.00\n8,2.00\n");
    const restated = await t.engine.runForDate("landed_files", "2026-09-01");
    expect(restated.run.state).toBe("success");
    expect(await rows()).toEqual([loaded[0], loaded[1], ["2026-09-01", "south.csv", 7, 1], ["2026-09-01", "south.csv", 8, 2], ...loaded.slice(3)]);
    const latest = await inWarehouse((target) => readHistory(target, "landed_orders", { limit: 1 }));
    expect(latest[0]).toMatchObject({ predicate: "file = south.csv and landed_on = 2026-09-01", rowsDeleted: 1, rowsWritten: 2 });
    expect(latest[0]!.batchId).toMatch(/^landed_files@2026-09-01\/load_file\[south\.csv\]#\d+$/);
  });

  it("fails only the file whose rows are bad, writing none of them, and the other files load", async () => {
    writeFileSync(join(params.landing, "2026-09-01", "bad.csv"), "order_id,amount\n9,-1.00\n");
    const run = await t.engine.runForDate("landed_files", "2026-09-01");
    expect(run.run.state).toBe("failed");
    const states = Object.fromEntries(run.tasks.map((x) => [x.taskId, x.state]));
    expect(states).toMatchObject({ "load_file[bad.csv]": "failed", "load_file[north.csv]": "success", "load_file[south.csv]": "success", load_file: "failed" });
    const [bad] = await t.store.listAttempts("landed_files@2026-09-01", "load_file[bad.csv]");
    expect(bad!.errorMessage).toMatch(/^landed_orders \(file = bad\.csv and landed_on = 2026-09-01\): check nonNegative\(amount\) failed/);
    expect((await rows()).map((r) => r[1])).toEqual(["north.csv", "north.csv", "south.csv"]);
  });
});
