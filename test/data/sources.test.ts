import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { DuckDBInstance } from "@duckdb/node-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DataError } from "../../src/core/model/errors.ts";
import { ident, openSQLite, replaceWhere, sql, type Target, type WriteContext } from "../../src/data/index.ts";
import { cleanTempDirs, dropSchema, targetKinds, tempDir } from "./targets.ts";

const context: WriteContext = { runId: "run-1", pipelineId: "p", taskId: "t", tryNumber: 1, businessDate: "2026-09-01" };
const columns = { id: "bigint", label: "text", paid: "boolean", at: "timestamp", day: "date" } as const;
const where = { column: "day", equals: "2026-09-01" };
let dir: string;
let jsonFile: string;
let parquetFile: string;

beforeAll(async () => {
  dir = tempDir();
  jsonFile = join(dir, "rows.json");
  parquetFile = join(dir, "rows.parquet");
  writeFileSync(jsonFile, JSON.stringify([{ id: 1, label: "a", paid: true, at: "2026-09-01 10:00:00" }, { id: 2, label: "it's \"quoted\"", paid: false, at: "2026-09-01 11:30:00" }]));
  const duck = await DuckDBInstance.create(":memory:");
  const c = await duck.connect();
  await c.run("COPY (SELECT 3 AS id, 'p' AS label, true AS paid, TIMESTAMP '2026-09-01 12:00:00' AS at) TO $1 (FORMAT parquet)", [parquetFile]);
  c.closeSync();
  duck.closeSync();
});
afterAll(cleanTempDirs);


for (const kind of targetKinds()) {
  describe.skipIf(kind.skip !== null)(`sources loaded into ${kind.name}`, () => {
    let target: Target;
    beforeAll(async () => {
      target = await kind.open();
    });
    afterAll(async () => {
      await dropSchema(target);
      await target.close();
    });
    const read = async (table: string) =>
      (await target.query(sql`SELECT id, label, paid, CAST(${ident("at")} AS VARCHAR(32)) AS ts FROM ${ident(table)} ORDER BY id`)).map((r) => [Number(r.id), r.label, r.paid === true || Number(r.paid) === 1, String(r.ts).slice(0, 16)]);

    it("reads a JSON file", async () => {
      await replaceWhere({ target, table: "from_json", columns, source: { json: jsonFile, constants: { day: "2026-09-01" } }, where, context });
      expect(await read("from_json")).toEqual([[1, "a", true, "2026-09-01 10:00"], [2, "it's \"quoted\"", false, "2026-09-01 11:30"]]);
    });

    it("reads a Parquet file", async () => {
      await replaceWhere({ target, table: "from_parquet", columns, source: { parquet: parquetFile, constants: { day: "2026-09-01" } }, where, context });
      expect(await read("from_parquet")).toEqual([[3, "p", true, "2026-09-01 12:00"]]);
    });

    it("reads a query run on another database", async () => {
      const other = await openSQLite(join(tempDir(), "source.sqlite"));
      await other.exec(sql`CREATE TABLE src (id INTEGER, label TEXT, paid INTEGER, at TEXT)`);
      await other.exec(sql`INSERT INTO src VALUES (4, 'q', 1, '2026-09-01 09:15:00'), (5, 'r', 0, '2026-09-01 09:45:00')`);
      await replaceWhere({ target, table: "from_query", columns, source: { sql: sql`SELECT id, label, paid, at FROM src WHERE id >= ${4}`, from: other, constants: { day: "2026-09-01" } }, where, context });
      await other.close();
      expect(await read("from_query")).toEqual([[4, "q", true, "2026-09-01 09:15"], [5, "r", false, "2026-09-01 09:45"]]);
    });

    it("creates a table from the source's own schema when none is declared", async () => {
      const result = await replaceWhere({ target, table: "undeclared", source: { json: jsonFile, constants: { day: "2026-09-01" } }, where, context });
      expect(result.rowsWritten).toBe(2);
      expect((await target.tableColumns("undeclared"))?.map((c) => c.name)).toEqual(["id", "label", "paid", "at", "day"]);
    });

    it("reads a CSV with quoted commas, quotes, newlines and empty values, whatever its column order", async () => {
      const csvColumns = { id: "bigint", label: "text", paid: "boolean", at: "timestamp" } as const;
      const body = 'id,label,paid,at\n1,"a, ""b""\nc",true,2026-09-01 10:00:00\n2,"",false,2026-09-01 11:30:00\n3,,,\n';
      const reordered = 'at,paid,label,id\n2026-09-01 10:00:00,true,"a, ""b""\nc",1\n2026-09-01 11:30:00,false,"",2\n,,,3\n';
      for (const [name, text] of [["in_order", body], ["reordered", reordered]] as const) {
        const file = join(dir, `${name}.csv`);
        writeFileSync(file, text);
        await replaceWhere({ target, table: name, columns, source: { csv: file, columns: csvColumns, constants: { day: "2026-09-01" } }, where, context });
        const rows = await target.query(sql`SELECT id, label, ${ident("at")} IS NULL AS no_time FROM ${ident(name)} ORDER BY id`);
        expect(rows.map((r) => [Number(r.id), r.label, Boolean(r.no_time)])).toEqual([[1, 'a, "b"\nc', false], [2, "", false], [3, null, true]]);
      }
    });

    it("fails with a data error, and does not hang, when a file's value does not fit its declared type", async () => {
      const file = join(dir, "bad.json");
      writeFileSync(file, JSON.stringify([{ id: 1, label: "a", paid: true, at: "2026-09-01 10:00:00" }, { id: "seven", label: "b", paid: false, at: "2026-09-01 10:00:00" }]));
      const attempt = replaceWhere({
        target, table: "from_bad_json", columns, context, where,
        source: { json: file, columns: { id: "bigint", label: "text", paid: "boolean", at: "timestamp" }, constants: { day: "2026-09-01" } },
      });
      await expect(attempt).rejects.toThrow(DataError);
      await expect(attempt).rejects.toThrow(/^pipeline p, task t, business date 2026-09-01: from_bad_json: loading json .*bad\.json failed: .*seven/);
    });

    it("quotes identifiers and binds values, so hostile names and values are just data", async () => {
      const table = 'orders"; DROP TABLE x; --';
      const hostile = "2026-09-01' OR '1'='1";
      await replaceWhere({ target, table, columns: { "we\"ird col": "text", day: "text" }, source: { rows: [{ "we\"ird col": "'); DROP TABLE y; --", day: hostile }] }, where: { column: "day", equals: hostile }, context });
      const rows = await target.query(sql`SELECT ${ident('we"ird col')} AS v FROM ${ident(table)}`);
      expect(rows).toEqual([{ v: "'); DROP TABLE y; --" }]);
    });
  });
}
