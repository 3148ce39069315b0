import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { DataError, DefinitionError } from "../../src/core/model/errors.ts";
import { readHistory, replaceWhere, sql, type Target, type WriteContext } from "../../src/data/index.ts";
import { cleanTempDirs, targetKinds, targetsOf, tempDir } from "./targets.ts";

const context: WriteContext = { runId: "run-1", pipelineId: "shop", taskId: "load_day", tryNumber: 1, businessDate: "2026-09-01" };
const columns = { order_id: "bigint", customer_id: "text", amount: "decimal(12,2)", order_date: "date" } as const;

function ordersCsv(rows: string[]): string {
  const file = join(tempDir(), "orders.csv");
  writeFileSync(file, ["order_id,customer_id,amount", ...rows].join("\n") + "\n");
  return file;
}

async function rowsOf(target: Target, date: string) {
  const rows = await target.query(sql`SELECT order_id, customer_id, amount FROM orders WHERE order_date = ${date} ORDER BY order_id`);
  return rows.map((r) => [Number(r.order_id), r.customer_id, Number(r.amount)]);
}

afterAll(cleanTempDirs);

for (const kind of targetKinds()) {
  describe.skipIf(kind.skip !== null)(`replaceWhere into ${kind.name}`, () => {
    const open = targetsOf(kind);

    const loadDay = (target: Target, date: string, file: string, extra: Partial<Parameters<typeof replaceWhere>[0]> = {}) =>
      replaceWhere({
        target,
        table: "orders",
        columns,
        source: { csv: file, columns: { order_id: "bigint", customer_id: "text", amount: "decimal(12,2)" }, constants: { order_date: date } },
        where: { column: "order_date", equals: date },
        context: { ...context, businessDate: date },
        ...extra,
      });

    it("creates the table on the first load and loads the day", async () => {
      const target = await open();
      const result = await loadDay(target, "2026-09-01", ordersCsv(["1,C1,10.50", "2,C2,20.25"]));
      expect(result).toMatchObject({ operation: "replaceWhere", predicate: "order_date = 2026-09-01", rowsDeleted: 0, rowsInserted: 2, rowsWritten: 2 });
      expect(await rowsOf(target, "2026-09-01")).toEqual([[1, "C1", 10.5], [2, "C2", 20.25]]);
    });

    it("replaces only its own day when run again, however often", async () => {
      const target = await open();
      await loadDay(target, "2026-09-01", ordersCsv(["1,C1,10.50", "2,C2,20.25"]));
      await loadDay(target, "2026-09-02", ordersCsv(["3,C3,5.00"]));
      const again = await loadDay(target, "2026-09-01", ordersCsv(["1,C1,11.00"]));
      await loadDay(target, "2026-09-01", ordersCsv(["1,C1,11.00"]));
      expect(again).toMatchObject({ rowsDeleted: 2, rowsInserted: 1 });
      expect(await rowsOf(target, "2026-09-01")).toEqual([[1, "C1", 11]]);
      expect(await rowsOf(target, "2026-09-02")).toEqual([[3, "C3", 5]]);
    });

    it("refuses staged rows outside the predicate, names how many, and writes nothing", async () => {
      const target = await open();
      await loadDay(target, "2026-09-01", ordersCsv(["1,C1,10.50"]));
      const rows = { rows: [{ order_id: 7, customer_id: "C7", amount: 1, order_date: "2026-09-01" }, { order_id: 8, customer_id: "C8", amount: 2, order_date: "2026-09-02" }] };
      const attempt = replaceWhere({ target, table: "orders", source: rows, where: { column: "order_date", equals: "2026-09-01" }, context });
      await expect(attempt).rejects.toThrow(DataError);
      await expect(attempt).rejects.toThrow(/orders \(order_date = 2026-09-01\): 1 staged row falls outside order_date = 2026-09-01, e\.g\. .*"order_id":8.*nothing written/);
      expect(await rowsOf(target, "2026-09-01")).toEqual([[1, "C1", 10.5]]);
    });

    it("accepts an interval predicate and a row array source", async () => {
      const target = await open();
      const rows = [
        { order_id: 1, customer_id: "A", amount: 1.5, order_date: "2026-09-01" },
        { order_id: 2, customer_id: "B", amount: 2.5, order_date: "2026-09-02" },
      ];
      const result = await replaceWhere({ target, table: "orders", columns, source: { rows }, where: { column: "order_date", from: "2026-09-01", to: "2026-09-03" }, context });
      expect(result).toMatchObject({ predicate: "order_date in [2026-09-01, 2026-09-03)", rowsInserted: 2 });
      expect(await rowsOf(target, "2026-09-02")).toEqual([[2, "B", 2.5]]);
    });

    it("fails on a value that does not parse as its declared type with a one-line data error, writing nothing", async () => {
      const target = await open();
      await loadDay(target, "2026-09-01", ordersCsv(["1,C1,10.50"]));
      const attempt = loadDay(target, "2026-09-01", ordersCsv(["2,C2,1", "x,C1,10.50"]));
      await expect(attempt).rejects.toThrow(DataError);
      await expect(attempt).rejects.toThrow(/^pipeline shop, task load_day, business date 2026-09-01: orders: loading csv .*orders\.csv failed: [^\n]*["']x["'][^\n]*$/);
      expect(await rowsOf(target, "2026-09-01")).toEqual([[1, "C1", 10.5]]);
    });

    it("fails on a missing file with an error that can be retried, writing nothing", async () => {
      const target = await open();
      await loadDay(target, "2026-09-01", ordersCsv(["1,C1,10.50"]));
      const attempt = loadDay(target, "2026-09-01", join(tempDir(), "absent.csv"));
      await expect(attempt).rejects.toThrow(/^pipeline shop, task load_day, business date 2026-09-01: orders: loading csv .*absent\.csv failed: /);
      await expect(attempt).rejects.not.toThrow(DataError);
      expect(await rowsOf(target, "2026-09-01")).toEqual([[1, "C1", 10.5]]);
    });

    it("says which column is missing when the source does not match the table", async () => {
      const target = await open();
      await loadDay(target, "2026-09-01", ordersCsv(["1,C1,10.50"]));
      const attempt = replaceWhere({ target, table: "orders", source: { rows: [{ order_id: 1, order_date: "2026-09-01" }] }, where: { column: "order_date", equals: "2026-09-01" }, context });
      await expect(attempt).rejects.toThrow(DefinitionError);
      await expect(attempt).rejects.toThrow(/does not provide column\(s\) customer_id, amount of table orders/);
    });

    it("records each write in _idem_history in the same transaction, newest first", async () => {
      const target = await open();
      await loadDay(target, "2026-09-01", ordersCsv(["1,C1,10.50", "2,C2,1"]));
      await loadDay(target, "2026-09-01", ordersCsv(["1,C1,10.50"]), { context: { ...context, runId: "run-2", tryNumber: 2 } });
      await expect(loadDay(target, "2026-09-01", ordersCsv(["1,C1,10.50", "1,C1,10.50"]), { checks: [{ uniqueKey: "order_id" }] })).rejects.toThrow(DataError);
      const history = await readHistory(target, "orders");
      expect(history.map((h) => [h.operation, h.predicate, h.rowsDeleted, h.rowsWritten, h.runId, h.tryNumber])).toEqual([
        ["replaceWhere", "order_date = 2026-09-01", 2, 1, "run-2", 2],
        ["replaceWhere", "order_date = 2026-09-01", 0, 2, "run-1", 1],
      ]);
    });
  });
}
