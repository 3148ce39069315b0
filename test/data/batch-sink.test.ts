import { afterAll, describe, expect, it } from "vitest";
import { DefinitionError } from "../../src/core/model/errors.ts";
import { batchSink, plainAppend, readHistory, sql, type Target, type WriteContext } from "../../src/data/index.ts";
import { cleanTempDirs, dropSchema, targetKinds, targetsOf } from "./targets.ts";

const context: WriteContext = { runId: "run-1", pipelineId: "events", taskId: "sink", tryNumber: 1 };
const rows = [{ event_id: 1, kind: "click" }, { event_id: 2, kind: "view" }];
const columns = { event_id: "bigint", kind: "text" } as const;

async function count(target: Target) {
  return Number((await target.query(sql`SELECT count(*) AS n FROM events`))[0]?.n);
}

afterAll(cleanTempDirs);

for (const kind of targetKinds()) {
  describe.skipIf(kind.skip !== null)(`appends into ${kind.name}`, () => {
    const open = targetsOf(kind);

    it("a plain append writes the rows again on every run, with no predicate in history", async () => {
      const target = await open();
      await plainAppend({ target, table: "events", columns, source: { rows }, context });
      await plainAppend({ target, table: "events", columns, source: { rows }, context });
      expect(await count(target)).toBe(4);
      const history = await readHistory(target, "events");
      expect(history.map((h) => [h.operation, h.predicate, h.rowsWritten])).toEqual([["append", null, 2], ["append", null, 2]]);
    });

    it("a batch-id sink applies a batch once, so a retry after a lost acknowledgement is a no-op", async () => {
      const target = await open();
      const first = await batchSink({ target, table: "events", columns, source: { rows }, context: { ...context, batchId: "b-1" } });
      const retry = await batchSink({ target, table: "events", columns, source: { rows }, context: { ...context, batchId: "b-1", tryNumber: 2 } });
      const next = await batchSink({ target, table: "events", columns, source: { rows: [rows[0]!] }, context: { ...context, batchId: "b-2" } });
      expect(first).toMatchObject({ rowsWritten: 2, skipped: null });
      expect(retry).toMatchObject({ rowsWritten: 0, skipped: "batch b-1 already applied" });
      expect(next.rowsWritten).toBe(1);
      expect(await count(target)).toBe(3);
      expect((await readHistory(target, "events")).map((h) => h.batchId)).toEqual(["b-2", "b-1"]);
    });

    it("a batch-id sink without a batch id is refused", async () => {
      const target = await open();
      await expect(batchSink({ target, table: "events", columns, source: { rows }, context })).rejects.toThrow(DefinitionError);
    });
  });
}

const pgServer = targetKinds().find((k) => k.name === "postgres")!;
describe.skipIf(pgServer.skip !== null)("a batch raced by two writers on postgres", () => {
  it("is applied by exactly one of them", async () => {
    const first = await pgServer.open();
    const schema = String((await first.query(sql`SELECT current_schema() AS s`))[0]?.s);
    const { openPostgres } = await import("../../src/data/index.ts");
    const second = await openPostgres({ url: process.env.IDEM_TEST_PG_URL!, schema });
    try {
      await plainAppend({ target: first, table: "events", columns, source: { rows: [] }, context });
      const write = (target: Target) => batchSink({ target, table: "events", columns, source: { rows }, context: { ...context, batchId: "race" } });
      const results = await Promise.all([write(first), write(second)]);
      expect(results.map((r) => r.skipped === null).sort()).toEqual([false, true]);
      expect(await count(first)).toBe(2);
    } finally {
      await second.close();
      await dropSchema(first);
      await first.close();
    }
  });
});
