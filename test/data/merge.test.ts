import { afterAll, describe, expect, it } from "vitest";
import { DataError, DefinitionError } from "../../src/core/model/errors.ts";
import { mergeByKey, readHistory, sql, type Target, type WriteContext } from "../../src/data/index.ts";
import { cleanTempDirs, targetKinds, targetsOf } from "./targets.ts";

const context: WriteContext = { runId: "run-1", pipelineId: "crm", taskId: "sync_customers", tryNumber: 1 };
const columns = { id: "bigint", region: "text", name: "text", balance: "double" } as const;

const customers = [
  { id: 1, region: "north", name: "Ada", balance: 10 },
  { id: 2, region: "north", name: "Bob", balance: 20 },
  { id: 3, region: "south", name: "Cy", balance: 30 },
];

async function contents(target: Target) {
  const rows = await target.query(sql`SELECT id, region, name, balance FROM customers ORDER BY id`);
  return rows.map((r) => [Number(r.id), r.region, r.name, Number(r.balance)]);
}

afterAll(cleanTempDirs);

for (const kind of targetKinds()) {
  describe.skipIf(kind.skip !== null)(`mergeByKey into ${kind.name}`, () => {
    const open = targetsOf(kind);
    const merge = (target: Target, rows: readonly Record<string, unknown>[], extra: Partial<Parameters<typeof mergeByKey>[0]> = {}) =>
      mergeByKey({ target, table: "customers", columns, key: "id", source: { rows }, context, whenMissingFromSource: "keep", ...extra });

    it("inserts new keys, updates changed rows and leaves unchanged rows alone", async () => {
      const target = await open();
      expect(await merge(target, customers)).toMatchObject({ rowsInserted: 3, rowsUpdated: 0, rowsUnchanged: 0, rowsDeleted: 0 });
      const second = await merge(target, [customers[0]!, { ...customers[1]!, balance: 25 }, { id: 4, region: "south", name: "Di", balance: 40 }]);
      expect(second).toMatchObject({ rowsInserted: 1, rowsUpdated: 1, rowsUnchanged: 1, rowsDeleted: 0, rowsWritten: 2 });
      expect(await contents(target)).toEqual([[1, "north", "Ada", 10], [2, "north", "Bob", 25], [3, "south", "Cy", 30], [4, "south", "Di", 40]]);
    });

    it("is a no-op the second time it merges the same rows", async () => {
      const target = await open();
      await merge(target, customers);
      expect(await merge(target, customers)).toMatchObject({ rowsInserted: 0, rowsUpdated: 0, rowsUnchanged: 3, rowsWritten: 0 });
    });

    it("treats a value changing to or from null as a change", async () => {
      const target = await open();
      await merge(target, customers);
      expect(await merge(target, [{ ...customers[0]!, name: null }])).toMatchObject({ rowsUpdated: 1 });
      expect(await merge(target, [{ ...customers[0]!, name: null }])).toMatchObject({ rowsUpdated: 0, rowsUnchanged: 1 });
      expect(await merge(target, [customers[0]!])).toMatchObject({ rowsUpdated: 1 });
    });

    it("deletes rows missing from the source only within its scope when told to", async () => {
      const target = await open();
      await merge(target, customers);
      const result = await merge(target, [customers[0]!], { whenMissingFromSource: "delete", scope: { column: "region", equals: "north" } });
      expect(result).toMatchObject({ rowsDeleted: 1, rowsUnchanged: 1, predicate: "key (id) within region = north" });
      expect(await contents(target)).toEqual([[1, "north", "Ada", 10], [3, "south", "Cy", 30]]);
    });

    it("keeps rows missing from the source when told to keep them", async () => {
      const target = await open();
      await merge(target, customers);
      expect(await merge(target, [customers[0]!])).toMatchObject({ rowsDeleted: 0 });
      expect((await contents(target)).length).toBe(3);
    });

    it("requires an explicit choice about rows missing from the source", async () => {
      const target = await open();
      await expect(merge(target, customers, { whenMissingFromSource: undefined as never })).rejects.toThrow(DefinitionError);
    });

    it("refuses duplicate keys in the source as a data error, writing nothing", async () => {
      const target = await open();
      await merge(target, customers);
      const attempt = merge(target, [customers[0]!, { ...customers[0]!, balance: 99 }]);
      await expect(attempt).rejects.toThrow(DataError);
      await expect(attempt).rejects.toThrow(/customers: check uniqueKey\(id\) failed: 1 offending row, e\.g\. .*"copies":2/);
      expect((await contents(target))[0]).toEqual([1, "north", "Ada", 10]);
    });

    it("refuses a value that does not fit its column as a one-line data error, writing nothing", async () => {
      const target = await open();
      await merge(target, customers);
      const attempt = merge(target, [{ id: 9, region: "west", name: "Ed", balance: "lots" }]);
      await expect(attempt).rejects.toThrow(DataError);
      await expect(attempt).rejects.toThrow(/^pipeline crm, task sync_customers: customers: (loading|merging) 1 rows failed: [^\n]*$/);
      expect((await contents(target)).length).toBe(3);
    });

    it("refuses staged rows outside its scope", async () => {
      const target = await open();
      await expect(merge(target, customers, { scope: { column: "region", equals: "north" } })).rejects.toThrow(/1 staged row falls outside region = north/);
    });

    it("records inserted, updated, unchanged and deleted counts in history", async () => {
      const target = await open();
      await merge(target, customers);
      await merge(target, [{ ...customers[0]!, balance: 11 }], { whenMissingFromSource: "delete" });
      const [latest] = await readHistory(target, "customers", { limit: 1 });
      expect(latest).toMatchObject({ operation: "mergeByKey", predicate: "key (id)", rowsUpdated: 1, rowsDeleted: 2, rowsWritten: 1 });
    });
  });
}
