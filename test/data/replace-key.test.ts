import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { DataError, DefinitionError } from "../../src/core/model/errors.ts";
import { readHistory, replaceKey, sql, tableContentHash, writeContextFrom, type Target } from "../../src/data/index.ts";
import { cleanTempDirs, targetKinds, targetsOf, tempDir } from "./targets.ts";

const columns = { order_id: "bigint", amount: "decimal(12,2)", file: "text" } as const;

function landed(name: string, rows: string[]): string {
  const path = join(tempDir(), name);
  writeFileSync(path, ["order_id,amount", ...rows].join("\n") + "\n");
  return path;
}

/** The context a mapped instance's task code gets, as far as a write needs it. */
function ctxOf(key: string, tryNumber = 1) {
  return writeContextFrom({ runId: "landed@2026-09-01", pipelineId: "landed", taskId: "load_file", tryNumber, businessDate: "2026-09-01", mapKey: key });
}

async function rowsOf(target: Target) {
  const rows = await target.query(sql`SELECT file, order_id, amount FROM orders ORDER BY file, order_id`);
  return rows.map((r) => [r.file, Number(r.order_id), Number(r.amount)]);
}

afterAll(cleanTempDirs);

for (const kind of targetKinds()) {
  describe.skipIf(kind.skip !== null)(`replaceKey into ${kind.name}`, () => {
    const open = targetsOf(kind);

    const load = (target: Target, key: string, path: string, tryNumber = 1) =>
      replaceKey({
        target,
        table: "orders",
        columns,
        keyColumn: "file",
        source: { csv: path, columns: { order_id: "bigint", amount: "decimal(12,2)" } },
        checks: [{ uniqueKey: "order_id" }],
        context: ctxOf(key, tryNumber),
      });

    it("replaces one key's rows and leaves the other key's untouched; a rerun is byte-identical", async () => {
      const target = await open();
      await load(target, "a.csv", landed("a.csv", ["1,10.00", "2,20.00"]));
      await load(target, "b.csv", landed("b.csv", ["1,5.00"]));
      expect(await rowsOf(target)).toEqual([["a.csv", 1, 10], ["a.csv", 2, 20], ["b.csv", 1, 5]]);

      const reloaded = await load(target, "a.csv", landed("a2.csv", ["3,30.00"]), 2);
      expect(reloaded).toMatchObject({ predicate: "file = a.csv", rowsDeleted: 2, rowsInserted: 1, skipped: null });
      expect(await rowsOf(target)).toEqual([["a.csv", 3, 30], ["b.csv", 1, 5]]);

      const before = await tableContentHash(target, "orders");
      const again = await load(target, "a.csv", landed("a3.csv", ["3,30.00"]), 3);
      expect(again).toMatchObject({ rowsDeleted: 1, rowsInserted: 1, skipped: null });
      expect(await tableContentHash(target, "orders")).toBe(before);

      const history = await readHistory(target, "orders");
      expect(history.map((h) => [h.predicate, h.batchId])).toEqual([
        ["file = a.csv", "landed@2026-09-01/load_file[a.csv]#3"],
        ["file = a.csv", "landed@2026-09-01/load_file[a.csv]#2"],
        ["file = b.csv", "landed@2026-09-01/load_file[b.csv]#1"],
        ["file = a.csv", "landed@2026-09-01/load_file[a.csv]#1"],
      ]);
    });

    it("applies one key's write once per try: the same try again is a no-op", async () => {
      const target = await open();
      const path = landed("a.csv", ["1,10.00"]);
      await load(target, "a.csv", path);
      const twice = await load(target, "a.csv", landed("other.csv", ["9,90.00"]));
      expect(twice.skipped).toBe("batch landed@2026-09-01/load_file[a.csv]#1 already applied");
      expect(await rowsOf(target)).toEqual([["a.csv", 1, 10]]);
    });

    it("writes nothing for the key when a check fails", async () => {
      const target = await open();
      await load(target, "a.csv", landed("a.csv", ["1,10.00"]));
      await expect(load(target, "a.csv", landed("dup.csv", ["1,1.00", "1,2.00"]), 2)).rejects.toThrow(DataError);
      expect(await rowsOf(target)).toEqual([["a.csv", 1, 10]]);
    });

    it("refuses a write with no key, and a source that fills the key column itself", async () => {
      const target = await open();
      const context = writeContextFrom({ runId: "r", pipelineId: "p", taskId: "t", tryNumber: 1 });
      const source = { csv: landed("a.csv", ["1,10.00"]) };
      await expect(replaceKey({ target, table: "orders", columns, keyColumn: "file", source, context })).rejects.toThrow(
        new DefinitionError("orders: replaceKey needs a key: run it in a mapped task (ctx.mapKey, through writeContextFrom(ctx)) or pass key"),
      );
      await expect(replaceKey({ target, table: "orders", columns, keyColumn: "file", key: "a.csv", source: { ...source, constants: { file: "x" } }, context })).rejects.toThrow(
        "orders: source constant file is replaceKey's key column; the loader fills it with the key",
      );
    });
  });
}
