import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { DefinitionError } from "../../src/core/model/errors.ts";
import { openDuckDB, plainAppend, runChecks, sql, swapPartition, type Source, type Target, type WriteContext } from "../../src/data/index.ts";
import { cleanTempDirs, tempDir } from "./targets.ts";

const context: WriteContext = { runId: "run-1", pipelineId: "p", taskId: "t", tryNumber: 1, businessDate: "2026-09-01" };
const targets: Target[] = [];
afterAll(async () => {
  for (const t of targets) await t.close();
  cleanTempDirs();
});

const shapes: [string, unknown, string][] = [
  ["no kind", {}, "orders: source must be { csv }, { json }, { parquet }, { sql } or { rows }"],
  ["two kinds", { csv: "a.csv", json: "a.json" }, "orders: source has csv and json: give one of them"],
  ["a key the kind does not take", { csv: "a.csv", delimeter: ";" }, 'orders: source csv: unknown key "delimeter" (csv, header, delimiter, columns, constants)'],
  ["from on a file", { parquet: "a.parquet", from: {} }, 'orders: source parquet: unknown key "from" (parquet, columns, constants)'],
  ["an empty path", { json: "" }, "orders: source json: expected a file path"],
  ["text for a query", { sql: "SELECT 1" }, "orders: source sql: expected a query built with the sql tag"],
  ["rows that are not a list", { rows: { id: 1 } }, "orders: source rows: expected a list of rows"],
  ["a header that is not a boolean", { csv: "a.csv", header: "yes" }, "orders: source csv: header: expected true or false"],
  ["constants that are a list", { rows: [], constants: [1] }, "orders: source rows: constants: expected { column: value }"],
];

describe("a load's source, read once where the load starts", () => {
  for (const [what, source, message] of shapes) {
    it(`refuses ${what} with one line naming the table, before anything is written`, async () => {
      const target = await openDuckDB(join(tempDir(), "w.duckdb"));
      targets.push(target);
      const load = plainAppend({ target, table: "orders", columns: { id: "bigint" }, source: source as Source, context });
      await expect(load).rejects.toThrow(new DefinitionError(message));
      expect(await target.tableColumns("orders")).toBeNull();
    });
  }

  it("is named by the partition for a file write, and by the check for a check's own source", async () => {
    const root = tempDir();
    await expect(swapPartition({ root, column: "order_date", value: "2026-09-01", source: { rows: [], csv: "x.csv" } as unknown as Source, context }))
      .rejects.toThrow(new DefinitionError(`${root}/order_date=2026-09-01: source has csv and rows: give one of them`));
    const target = await openDuckDB(join(tempDir(), "w.duckdb"));
    targets.push(target);
    await expect(runChecks({ target, relation: sql`(SELECT 1 AS id)`, label: "orders" }, [{ rowCountEqualsSource: true, against: { csv: 3 } as unknown as Source }]))
      .rejects.toThrow(new DefinitionError("orders: check rowCountEqualsSource against: source csv: expected a file path"));
  });
});
