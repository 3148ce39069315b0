import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { pipeline } from "../../src/core/pipeline/define.ts";
import { daily } from "../../src/core/time/index.ts";
import { incrementalLoad, openSQLite, sql, writeContextFrom, type Watermark } from "../../src/data/index.ts";
import { ScheduleHarness } from "../support/scheduling.ts";

let h: ScheduleHarness;
afterEach(async () => h?.close());

interface Read { date: string; trigger: string; tryNumber: number; since: Watermark | null; until: Watermark | null; read: string; written: number }

/**
 * orders_incr: a daily incremental load of `src` (id, updated_at text) into `orders`, keyed on id,
 * with a 2h lookback. Runs 2026-09-01..2026-09-14 are scheduled first, so the watermark stands at
 * the newest row, 2026-09-14 10:00; then a row arrives with updated_at 13 days old.
 */
async function setup(options: { restate?: boolean } = {}) {
  let warehouse = "";
  const reads: Read[] = [];
  const p = pipeline("orders_incr", { schedule: daily({ at: "01:00", timezone: "UTC" }), start: "2026-09-01", ...(options.restate ? { restate: { last: 14 } } : {}) }, {
    pull: {
      pool: "warehouse", // one SQLite file written by one task at a time
      run: async (ctx) => {
        const target = await openSQLite(warehouse);
        try {
          let asked: [Watermark | null, Watermark | null] = [null, null];
          const result = await incrementalLoad({
            target, table: "orders", columns: { id: "bigint", updated_at: "text" }, key: "id", watermarkColumn: "updated_at", lookback: "2h",
            store: ctx.watermarks, context: writeContextFrom(ctx),
            source: (since, until) => {
              asked = [since, until];
              return { sql: sql`SELECT id, updated_at FROM src WHERE (${since} IS NULL OR updated_at > ${since}) AND (${until} IS NULL OR updated_at < ${until})` };
            },
          });
          const written = result.rowsInserted + result.rowsUpdated;
          reads.push({ date: ctx.businessDate, trigger: ctx.trigger, tryNumber: ctx.tryNumber, since: asked[0], until: asked[1], read: result.read, written });
          return { written };
        } finally {
          await target.close();
        }
      },
    },
  });
  h = await ScheduleHarness.open([p], "2026-09-01T00:00:00Z");
  await h.engine.setPool("warehouse", 1);
  warehouse = join(h.dir, "warehouse.db");
  const addRows = async (rows: [number, string][]) => {
    const db = await openSQLite(warehouse);
    try {
      await db.exec(sql`CREATE TABLE IF NOT EXISTS src (id BIGINT, updated_at TEXT)`);
      for (const [id, at] of rows) await db.exec(sql`INSERT INTO src VALUES (${id}, ${at})`);
    } finally {
      await db.close();
    }
  };
  const loaded = async () => {
    const db = await openSQLite(warehouse);
    try {
      return (await db.query(sql`SELECT id FROM orders ORDER BY id`)).map((r) => Number(r.id));
    } finally {
      await db.close();
    }
  };
  const watermark = () => h.store.getWatermark("orders_incr", "pull");
  await addRows([[1, "2026-09-01 10:00:00"], [2, "2026-09-14 10:00:00"]]);
  await h.at("2026-09-15T01:00:00Z");
  expect(reads).toHaveLength(14);
  expect(reads[0]).toMatchObject({ trigger: "schedule", since: null, until: null, written: 2 });
  expect(await watermark()).toBe("2026-09-14 10:00:00");
  await addRows([[3, "2026-09-02 12:00:00"]]); // 13 days old when it arrives
  reads.length = 0;
  return { reads, addRows, loaded, watermark };
}

describe("an incremental load reads by the run's trigger (core/policy/incremental-reads.ts)", () => {
  it("schedule: reads from the watermark minus the lookback with no upper bound, and moves the watermark", async () => {
    const { reads, addRows, loaded, watermark } = await setup();
    await addRows([[4, "2026-09-15 09:00:00"]]);
    await h.at("2026-09-16T01:00:00Z");
    expect(reads).toEqual([{ date: "2026-09-15", trigger: "schedule", tryNumber: 1, since: "2026-09-14 08:00:00", until: null, read: "stream", written: 1 }]);
    // the 13-day-old row is older than the lookback: the stream does not read it (a backfill does)
    expect(await loaded()).toEqual([1, 2, 4]);
    expect(await watermark()).toBe("2026-09-15 09:00:00");
  });

  it("backfill: reads the day's window (start minus the lookback up to its end) and leaves the watermark", async () => {
    const { reads, addRows, loaded, watermark } = await setup();
    await addRows([[5, "2026-09-15 09:00:00"]]);
    const { backfill } = await h.engine.backfill("orders_incr", { from: "2026-09-02", to: "2026-09-02", reprocess: "all", reason: "late row" });
    await h.scheduler.tick();
    await h.work();
    expect((await h.engine.backfillStatus(backfill.backfillId)).progress.succeeded).toBe(1);
    expect(reads).toEqual([{ date: "2026-09-02", trigger: "backfill", tryNumber: 2, since: "2026-09-01 21:59:59.999", until: "2026-09-03 00:00:00", read: "window", written: 1 }]);
    expect(await loaded()).toEqual([1, 2, 3]);
    expect(await watermark()).toBe("2026-09-14 10:00:00");
  });

  it("manual: a run of a day no schedule ran reads that day's window and leaves the watermark", async () => {
    const { reads, addRows, loaded, watermark } = await setup();
    await h.engine.pause("orders_incr");
    await addRows([[6, "2026-09-15 12:00:00"], [7, "2026-09-16 08:00:00"]]);
    h.clock.set("2026-09-17T00:00:00Z");
    await h.engine.trigger("orders_incr", "2026-09-15");
    await h.work();
    expect(reads).toEqual([{ date: "2026-09-15", trigger: "manual", tryNumber: 1, since: "2026-09-14 21:59:59.999", until: "2026-09-16 00:00:00", read: "window", written: 1 }]);
    expect(await loaded()).toEqual([1, 2, 6]);
    expect(await watermark()).toBe("2026-09-14 10:00:00");
    // the schedule's stream still has everything after the watermark to read
    await h.engine.unpause("orders_incr");
    await h.at("2026-09-17T01:00:00Z");
    expect(await loaded()).toEqual([1, 2, 6, 7]);
    expect(await watermark()).toBe("2026-09-16 08:00:00");
  });

  it("restate: each restated day reads its own window and leaves the watermark to the schedule", async () => {
    const { reads, addRows, loaded, watermark } = await setup({ restate: true });
    await addRows([[8, "2026-09-15 09:00:00"]]);
    await h.at("2026-09-16T01:00:00Z");
    expect(reads[0]).toMatchObject({ date: "2026-09-15", trigger: "schedule", read: "stream", until: null });
    const restated = reads.slice(1);
    expect(restated).toHaveLength(14);
    for (const r of restated) expect(r).toMatchObject({ trigger: "restate", read: "window" });
    expect(restated.find((r) => r.date === "2026-09-02")).toMatchObject({ since: "2026-09-01 21:59:59.999", until: "2026-09-03 00:00:00", written: 1 });
    expect(await loaded()).toEqual([1, 2, 3, 8]);
    expect(await watermark()).toBe("2026-09-15 09:00:00"); // moved by the scheduled run only
  });

  it("a clear (or `idem run` again) of a scheduled day is that scheduled run again: it reads back to its own window, and the watermark only moves forward", async () => {
    const { reads, addRows, loaded, watermark } = await setup();
    await addRows([[9, "2026-09-15 00:30:00"]]);
    await h.engine.clear("orders_incr@2026-09-02", { reason: "a late row for the 2nd" });
    await h.work();
    expect(reads).toEqual([{ date: "2026-09-02", trigger: "schedule", tryNumber: 2, since: "2026-09-01 21:59:59.999", until: null, read: "stream", written: 2 }]);
    expect(await loaded()).toEqual([1, 2, 3, 9]);
    expect(await watermark()).toBe("2026-09-15 00:30:00");
  });
});
