import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { DataError } from "../../src/core/model/errors.ts";
import { readHistory, replaceWhere, sql, type Check, type Target, type WriteContext } from "../../src/data/index.ts";
import { cleanTempDirs, dropSchema, targetKinds, tempDir } from "./targets.ts";

const context: WriteContext = { runId: "run-1", pipelineId: "shop", taskId: "load_day", tryNumber: 1, businessDate: "2026-09-01" };
const fileColumns = { order_id: "bigint", status: "text", amount: "decimal(12,2)" } as const;

function csv(lines: string[]): string {
  const file = join(tempDir(), "orders.csv");
  writeFileSync(file, ["order_id,status,amount", ...lines].join("\n") + "\n");
  return file;
}

afterAll(cleanTempDirs);

for (const kind of targetKinds()) {
  describe.skipIf(kind.skip !== null)(`checks on staged rows in ${kind.name}`, () => {
    let target: Target;
    afterAll(async () => {
      if (!target) return;
      await dropSchema(target);
      await target.close();
    });

    const load = async (lines: string[], checks: Check[]) => {
      target ??= await kind.open();
      return replaceWhere({
        target,
        table: "orders",
        columns: { ...fileColumns, order_date: "date" },
        source: { csv: csv(lines), columns: fileColumns, constants: { order_date: "2026-09-01" } },
        where: { column: "order_date", equals: "2026-09-01" },
        checks,
        context,
      });
    };
    const published = async () => (await target.query(sql`SELECT order_id FROM orders ORDER BY order_id`)).map((r) => Number(r.order_id));

    it("publishes when every check passes", async () => {
      const checks: Check[] = [
        { rowCountEqualsSource: true },
        { notNull: ["order_id", "status"] },
        { nonNegative: "amount" },
        { uniqueKey: "order_id" },
        { acceptedValues: { column: "status", values: ["paid", "refunded"] } },
        { reconcileSum: "amount" },
        { custom: "no order over 1000", offending: (staged) => sql`SELECT * FROM ${staged} AS s WHERE amount > 1000` },
      ];
      expect(await load(["1,paid,10.10", "2,refunded,0.20"], checks)).toMatchObject({ rowsWritten: 2 });
      expect(await published()).toEqual([1, 2]);
    });

    const failing: [string, string[], Check, RegExp][] = [
      ["notNull", ["1,paid,1", "2,,2"], { notNull: "status" }, /check notNull\(status\) failed: 1 offending row, e\.g\. \{"order_id":2,/],
      ["nonNegative", ["1,paid,-1"], { nonNegative: "amount" }, /check nonNegative\(amount\) failed: 1 offending row/],
      ["uniqueKey", ["1,paid,1", "1,paid,1", "1,paid,1"], { uniqueKey: ["order_id"] }, /check uniqueKey\(order_id\) failed: 1 offending row, e\.g\. \{"order_id":1,"copies":3\}/],
      ["acceptedValues", ["1,paid,1", "2,lost,1", "3,stolen,1"], { acceptedValues: { column: "status", values: ["paid"] } }, /check acceptedValues\(status\) failed: 2 offending rows/],
      ["custom SQL", ["1,paid,5000"], { custom: "no order over 1000", offending: (s) => sql`SELECT order_id FROM ${s} AS s WHERE amount > 1000` }, /check no order over 1000 failed: 1 offending row, e\.g\. \{"order_id":1\}/],
    ];
    for (const [name, lines, check, message] of failing) {
      it(`a failing ${name} check is a data error naming the check and its rows, and nothing is published`, async () => {
        await load(["9,paid,1"], []);
        const attempt = load(lines, [check]);
        await expect(attempt).rejects.toThrow(DataError);
        await expect(attempt).rejects.toThrow(message);
        expect(await published()).toEqual([9]);
      });
    }

    it("a row count that differs from the source's fails the rowCountEqualsSource check", async () => {
      target ??= await kind.open();
      const file = csv(["1,paid,1", "2,paid,2"]);
      const attempt = replaceWhere({
        target,
        table: "orders",
        source: { sql: sql`SELECT 1 AS order_id, 'paid' AS status, 1.0 AS amount, ${"2026-09-01"} AS order_date` },
        where: { column: "order_date", equals: "2026-09-01" },
        checks: [{ rowCountEqualsSource: true }],
        context,
      });
      await expect(attempt).resolves.toMatchObject({ rowsWritten: 1 });
      const mismatch = replaceWhere({
        target,
        table: "orders",
        source: { rows: [{ order_id: 1, status: "paid", amount: 1, order_date: "2026-09-01" }] },
        where: { column: "order_date", equals: "2026-09-01" },
        checks: [{ rowCountEqualsSource: true, against: { csv: file } }],
        context,
      });
      await expect(mismatch).rejects.toThrow(/orders \(order_date = 2026-09-01\): check rowCountEqualsSource failed: 1 rows, the source has 2/);
      expect(await published()).toEqual([1]);
    });

    it("a reconciliation compares the staged sum with the source's and shows the difference", async () => {
      target ??= await kind.open();
      const attempt = replaceWhere({
        target,
        table: "orders",
        source: { rows: [{ order_id: 1, status: "paid", amount: 10.25, order_date: "2026-09-01" }] },
        where: { column: "order_date", equals: "2026-09-01" },
        checks: [{ reconcileSum: "amount", sourceColumn: "order_id" }],
        context,
      });
      await expect(attempt).rejects.toThrow(/check reconcileSum\(amount\) failed: sum\(amount\) is 10\.25, 1 in the source \(difference 9\.25\)/);
    });

    it("reports every failed check, and a failed write leaves no history", async () => {
      await load(["9,paid,1"], []);
      const before = (await readHistory(target, "orders")).length;
      await expect(load(["1,,-1"], [{ notNull: "status" }, { nonNegative: "amount" }])).rejects.toThrow(/check notNull\(status\) failed: .*\(and 1 more failed: nonNegative\(amount\)\)/);
      expect((await readHistory(target, "orders")).length).toBe(before);
    });
  });
}
