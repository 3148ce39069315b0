import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { DataError, DefinitionError } from "../../src/core/model/errors.ts";
import { FrozenPeriodError, mergeByKey, openDuckDB, plainAppend, readHistory, replaceWhere, sql, type FrozenPeriod, type Target, type WriteContext } from "../../src/data/index.ts";
import { cleanTempDirs, tempDir } from "./targets.ts";

const frozen: FrozenPeriod[] = [{ from: "2026-08-01", to: "2026-08-31", owner: "finance", reason: "August accounts are closed" }];
const context: WriteContext = { runId: "run-1", pipelineId: "shop", taskId: "load_day", tryNumber: 1, businessDate: "2026-08-15" };
const columns = { order_id: "bigint", order_date: "date" } as const;
const day = (date: string, ids: number[]) => ({ rows: ids.map((order_id) => ({ order_id, order_date: date })) });

describe("frozen business dates", () => {
  const targets: Target[] = [];
  const open = async () => {
    const t = await openDuckDB(join(tempDir(), "w.duckdb"));
    targets.push(t);
    return t;
  };
  afterAll(async () => {
    for (const t of targets) await t.close();
    cleanTempDirs();
  });

  it("refuses a replace of a frozen date with the period and its reason, and writes nothing", async () => {
    const target = await open();
    await replaceWhere({ target, table: "orders", columns, source: day("2026-08-15", [1]), where: { column: "order_date", equals: "2026-08-15" }, context });
    const attempt = replaceWhere({ target, table: "orders", columns, source: day("2026-08-15", [2]), where: { column: "order_date", equals: "2026-08-15" }, context, frozen });
    await expect(attempt).rejects.toThrow(FrozenPeriodError);
    await expect(attempt).rejects.toThrow("orders (order_date = 2026-08-15): 2026-08-15 is in the frozen period 2026-08-01..2026-08-31 (finance: August accounts are closed); pass openFrozen: { reason } to write it anyway");
    expect((await target.query(sql`SELECT order_id FROM orders`)).map((r) => r.order_id)).toEqual([1]);
  });

  it("is a data error, so the attempt is not retried", async () => {
    const target = await open();
    await expect(plainAppend({ target, table: "orders", columns, source: day("2026-08-15", [1]), context, frozen })).rejects.toThrow(DataError);
  });

  it("refuses a range predicate that overlaps a frozen period even when the run's date is open", async () => {
    const target = await open();
    const where = { column: "order_date", from: "2026-08-30", to: "2026-09-02" };
    await expect(replaceWhere({ target, table: "orders", columns, source: day("2026-09-01", [1]), where, context: { ...context, businessDate: "2026-09-01" }, frozen })).rejects.toThrow(
      /2026-08-30\.\.2026-09-01 is in the frozen period/,
    );
  });

  it("refuses staged rows dated inside a frozen period when a dateColumn is named", async () => {
    const target = await open();
    const attempt = mergeByKey({ target, table: "orders", columns, key: "order_id", whenMissingFromSource: "keep", source: day("2026-08-20", [5]), context: { ...context, businessDate: "2026-09-01" }, frozen, dateColumn: "order_date" });
    await expect(attempt).rejects.toThrow(/orders: 2026-08-20 is in the frozen period/);
  });

  it("writes a frozen date when the call opens it with a reason, and history records the reason", async () => {
    const target = await open();
    const result = await replaceWhere({
      target, table: "orders", columns, source: day("2026-08-15", [3]), where: { column: "order_date", equals: "2026-08-15" }, context, frozen,
      openFrozen: { reason: "restated after audit #12" },
    });
    expect(result.frozenOverride).toBe("restated after audit #12");
    const [entry] = await readHistory(target, "orders");
    expect(entry?.frozenOverride).toBe("restated after audit #12");
  });

  it("lets writes outside frozen periods through untouched", async () => {
    const target = await open();
    const result = await replaceWhere({ target, table: "orders", columns, source: day("2026-09-01", [4]), where: { column: "order_date", equals: "2026-09-01" }, context: { ...context, businessDate: "2026-09-01" }, frozen });
    expect(result).toMatchObject({ rowsWritten: 1, frozenOverride: null });
  });

  it("takes the same periods as idem.config.ts: one without an owner or with a bad date is a definition error naming the write", async () => {
    const target = await open();
    const write = (periods: unknown) => plainAppend({ target, table: "orders", columns, source: day("2026-09-01", [1]), context, frozen: periods as FrozenPeriod[] });
    await expect(write([{ from: "2026-08-01", to: "2026-08-31", reason: "closed" }])).rejects.toThrow(
      new DefinitionError('orders: frozen[0].owner: a frozen period needs an owner (who answers for it, e.g. "finance")'),
    );
    await expect(write([{ from: "2026-08-31", to: "2026-08-01", owner: "finance", reason: "closed" }])).rejects.toThrow("orders: frozen[0]: to 2026-08-01 is before from 2026-08-31");
    expect(await target.tableColumns("orders")).toBeNull();
  });
});
