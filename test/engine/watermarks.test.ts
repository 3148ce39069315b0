import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { pipeline } from "../../src/core/pipeline/define.ts";
import { daily } from "../../src/core/time/index.ts";
import { incrementalLoad, openSQLite, sql, writeContextFrom, type Watermark } from "../../src/data/index.ts";
import { ScheduleHarness } from "../support/scheduling.ts";

let h: ScheduleHarness;
afterEach(async () => h?.close());

describe("incremental loads inside idem", () => {
  it("keep their watermark in the state store, moved by scheduled runs and never by a backfill", async () => {
    let warehouse = "";
    const reads: (Watermark | null)[] = [];
    const p = pipeline("events", { schedule: daily({ at: "01:00", timezone: "UTC" }), start: "2026-09-01" }, {
      pull: {
        run: async (ctx) => {
          const target = await openSQLite(warehouse);
          try {
            const result = await incrementalLoad({
              target, table: "events", columns: { id: "bigint", version: "bigint" }, key: "id", watermarkColumn: "version", lookback: 0,
              store: ctx.watermarks, context: writeContextFrom(ctx),
              source: (since) => {
                reads.push(since);
                return { sql: since === null ? sql`SELECT id, version FROM src` : sql`SELECT id, version FROM src WHERE version > ${since}` };
              },
            });
            return { written: result.rowsInserted + result.rowsUpdated };
          } finally {
            await target.close();
          }
        },
      },
    });
    h = await ScheduleHarness.open([p], "2026-09-01T00:00:00Z");
    warehouse = join(h.dir, "warehouse.db");
    const seed = await openSQLite(warehouse);
    await seed.exec(sql`CREATE TABLE src (id BIGINT, version BIGINT)`);
    await seed.exec(sql`INSERT INTO src VALUES (1, 10), (2, 20)`);
    await seed.close();

    await h.at("2026-09-02T01:00:00Z");
    expect(await h.store.getWatermark("events", "pull")).toBe(20);
    await h.engine.pause("events");
    const more = await openSQLite(warehouse);
    await more.exec(sql`INSERT INTO src VALUES (3, 30)`);
    await more.close();
    const { backfill } = await h.engine.backfill("events", { from: "2026-09-01", to: "2026-09-01", reprocess: "all", reason: "rebuild" });
    await h.scheduler.tick();
    await h.work();
    expect((await h.engine.backfillStatus(backfill.backfillId)).progress.succeeded).toBe(1);
    // a numeric watermark (a version) cannot select an interval: the backfill reads everything
    expect(reads).toEqual([null, null]);
    // the backfill saw version 30 and wrote it, but left the watermark where it was
    const [attempt] = (await h.store.listAttempts("events@2026-09-01", "pull")).slice(-1);
    expect(attempt!.summary).toEqual({ written: 1 });
    expect(await h.store.getWatermark("events", "pull")).toBe(20);
    await h.engine.unpause("events");
    await h.at("2026-09-03T01:00:00Z");
    expect(await h.store.getWatermark("events", "pull")).toBe(30);
  });
});
