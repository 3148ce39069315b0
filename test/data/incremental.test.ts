import { afterAll, describe, expect, it } from "vitest";
import { intervalWindow } from "../../src/data/watermark.ts";
import { incrementalLoad, memoryWatermarkStore, sql, subtractLookback, tableWatermarkStore, type Target, type Watermark, type WriteContext } from "../../src/data/index.ts";
import { cleanTempDirs, targetKinds, targetsOf } from "./targets.ts";

const context = { runId: "run-1", pipelineId: "crm", taskId: "sync_orders", tryNumber: 1, trigger: null } satisfies WriteContext;

afterAll(cleanTempDirs);

describe("lookback arithmetic", () => {
  it("moves numbers by a number and timestamps by a duration, keeping their shape", () => {
    expect(subtractLookback(100, 5)).toBe(95);
    expect(subtractLookback("2026-09-01 10:00:00", "2h")).toBe("2026-09-01 08:00:00");
    expect(subtractLookback("2026-09-01T00:30:00Z", "1h")).toBe("2026-08-31T23:30:00Z");
    expect(subtractLookback("2026-09-03", "2d")).toBe("2026-09-01");
  });

  it("gives an interval's window in the saved watermark's shape, since exclusive, until the interval's end", () => {
    const day = { start: "2026-09-02T00:00:00+02:00", end: "2026-09-03T00:00:00+02:00" };
    expect(intervalWindow(day, "2h", "2026-09-14 10:00:00")).toEqual({ since: "2026-09-01 19:59:59.999", until: "2026-09-02 22:00:00" });
    expect(intervalWindow(day, undefined, "2026-09-14T10:00:00Z")).toEqual({ since: "2026-09-01T21:59:59.999Z", until: "2026-09-02T22:00:00Z" });
    expect(intervalWindow(day, "2h", null)).toEqual({ since: "2026-09-01T19:59:59.999Z", until: "2026-09-02T22:00:00Z" });
    // a date column: the business date's own days, in the schedule's zone
    expect(intervalWindow(day, "1d", "2026-09-14")).toEqual({ since: "2026-08-31", until: "2026-09-03" });
    expect(intervalWindow(day, undefined, "2026-09-14")).toEqual({ since: "2026-09-01", until: "2026-09-03" });
  });

  it("refuses a window run whose context has no interval, naming the table", async () => {
    const load = incrementalLoad({
      target: null as never, table: "orders", key: "id", watermarkColumn: "updated_at", lookback: "2h", store: memoryWatermarkStore(),
      context: { ...context, trigger: "backfill" }, source: () => ({ rows: [] }),
    });
    await expect(load).rejects.toThrow("orders: a backfill run of an incremental load reads its interval, and the write context has none; build it with writeContextFrom(ctx)");
  });
});

for (const kind of targetKinds()) {
  describe.skipIf(kind.skip !== null)(`incremental loads with a watermark into ${kind.name}`, () => {
    const open = targetsOf(kind);
    const setup = async () => {
      const target = await open();
      await target.exec(sql`CREATE TABLE src (id BIGINT, status VARCHAR(20), version BIGINT)`);
      await target.exec(sql`INSERT INTO src VALUES (1, 'new', 10), (2, 'new', 20), (3, 'new', 30)`);
      const reads: (Watermark | null)[] = [];
      const source = (since: Watermark | null) => {
        reads.push(since);
        return { sql: since === null ? sql`SELECT id, status, version FROM src` : sql`SELECT id, status, version FROM src WHERE version > ${since}` };
      };
      const load = (extra: Partial<Parameters<typeof incrementalLoad>[0]> = {}) =>
        incrementalLoad({ target, table: "orders", columns: { id: "bigint", status: "text", version: "bigint" }, key: "id", watermarkColumn: "version", lookback: 5, store, source, context, ...extra });
      const store = tableWatermarkStore(target);
      return { target, load, reads, store };
    };

    it("reads everything first, then only rows newer than the watermark minus the lookback", async () => {
      const { target, load, reads } = await setup();
      expect(await load()).toMatchObject({ rowsInserted: 3, watermarkBefore: null, watermarkAfter: 30, readSince: null });
      await target.exec(sql`UPDATE src SET status = 'paid', version = 40 WHERE id = 1`);
      await target.exec(sql`INSERT INTO src VALUES (4, 'new', 28)`);
      const second = await load();
      expect(reads).toEqual([null, 25]);
      expect(second).toMatchObject({ rowsInserted: 1, rowsUpdated: 1, rowsUnchanged: 1, watermarkAfter: 40 });
      const rows = await target.query(sql`SELECT id, status FROM orders ORDER BY id`);
      expect(rows.map((r) => `${String(r.id)}:${String(r.status)}`)).toEqual(["1:paid", "2:new", "3:new", "4:new"]);
    });

    it("never moves the watermark backwards", async () => {
      const { target, load, store } = await setup();
      await load();
      await target.exec(sql`DELETE FROM src WHERE version > 20`);
      await store.save(context.pipelineId, context.taskId, 12);
      expect(await load({ lookback: 100 })).toMatchObject({ watermarkBefore: 30, watermarkAfter: 30 });
      expect(await store.get(context.pipelineId, context.taskId)).toBe(30);
    });

    it("a backfill loads rows but leaves the watermark where it was", async () => {
      const { load, store } = await setup();
      // the loader reads the trigger itself: a backfill, whatever its store, leaves the watermark still
      expect(await load({ context: { ...context, trigger: "backfill" } })).toMatchObject({ rowsInserted: 3, watermarkAfter: null });
      expect(await store.get(context.pipelineId, context.taskId)).toBeNull();
      expect(await load({ moveWatermark: false })).toMatchObject({ rowsUnchanged: 3, watermarkAfter: null });
    });

    it("saves the watermark only after the rows committed", async () => {
      const { load, store } = await setup();
      const seen: string[] = [];
      await load({ onStep: async (step) => void seen.push(`${step}:${String(await store.get(context.pipelineId, context.taskId))}`) });
      expect(seen.filter((s) => !s.startsWith("staging"))).toEqual(["staged:null", "checked:null", "written:null", "committed:null", "watermarked:30"]);
    });
  });
}

describe("the in-memory watermark store", () => {
  it("keeps the highest value per pipeline and task", async () => {
    const store = memoryWatermarkStore();
    await store.save("p", "t", "2026-09-01 10:00:00");
    await store.save("p", "t", "2026-09-01 09:00:00");
    await store.save("p", "u", 5);
    expect(await store.get("p", "t")).toBe("2026-09-01 10:00:00");
    expect(await store.get("p", "u")).toBe(5);
    expect(await store.get("q", "t")).toBeNull();
  });
});
