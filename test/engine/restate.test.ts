import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { pipeline } from "../../src/core/pipeline/define.ts";
import type { PipelineOptions, TaskContext, TaskSpec } from "../../src/core/pipeline/types.ts";
import { addDays } from "../../src/core/time/dates.ts";
import { daily } from "../../src/core/time/index.ts";
import { incrementalLoad, openSQLite, replaceWhere, sql, tableContentHash, writeContextFrom } from "../../src/data/index.ts";
import { Scheduler } from "../../src/engine/scheduler/scheduler.ts";
import { ScheduleHarness } from "../support/scheduling.ts";

let h: ScheduleHarness;
afterEach(async () => h?.close());

const FIRST = "2026-09-01";
/** Business date of day n (1 = the first). */
const date = (n: number) => addDays(FIRST, n - 1);
/** When day n's interval fires: 02:00 UTC the next day. */
const firesAt = (n: number) => Date.parse(`${date(n + 1)}T02:00:00Z`);
const ORDERS = { order_id: "bigint", order_date: "text", amount: "bigint" } as const;

/** Replaces the day's orders in `orders` from `orders_src`, both in the warehouse file. */
async function loadDay(warehouse: string, ctx: Pick<TaskContext, "runId" | "pipelineId" | "taskId" | "tryNumber" | "businessDate" | "frozen">) {
  const target = await openSQLite(warehouse);
  try {
    const result = await replaceWhere({
      target, table: "orders", columns: ORDERS, context: writeContextFrom(ctx), frozen: ctx.frozen,
      where: { column: "order_date", equals: ctx.businessDate },
      source: { sql: sql`SELECT order_id, order_date, amount FROM orders_src WHERE order_date = ${ctx.businessDate}` },
    });
    return { rows: result.rowsWritten };
  } finally {
    await target.close();
  }
}

async function addOrders(warehouse: string, rows: [id: number, day: string, amount: number][]) {
  const db = await openSQLite(warehouse);
  try {
    await db.exec(sql`CREATE TABLE IF NOT EXISTS orders_src (order_id BIGINT, order_date TEXT, amount BIGINT)`);
    for (const [id, day, amount] of rows) await db.exec(sql`INSERT INTO orders_src VALUES (${id}, ${day}, ${amount})`);
  } finally {
    await db.close();
  }
}

async function contentHash(warehouse: string): Promise<string> {
  const db = await openSQLite(warehouse);
  try {
    return await tableContentHash(db, "orders");
  } finally {
    await db.close();
  }
}

/** The orders of day n, written at its close: n orders with ids n*100 + k. */
const ordersOf = (n: number): [number, string, number][] => Array.from({ length: n % 4 + 1 }, (_, k) => [n * 100 + k, date(n), n + k]);

/** Ticks and works until nothing moves, like ScheduleHarness.at but with any scheduler. */
async function settle(scheduler: Scheduler): Promise<void> {
  for (let round = 0; round < 1000; round++) {
    const tick = await scheduler.tick();
    if ((await h.work()) === 0 && tick.runsCreated === 0) return;
  }
  throw new Error("did not settle");
}

describe("restating a trailing window", () => {
  it("runs each day once as scheduled, then restates it up to 7 times; late rows land and watermarks stay with the schedule", async () => {
    let warehouse = "";
    const loads: [string, string][] = [];
    const exports: string[] = [];
    const orders = pipeline("orders", {
      schedule: daily({ at: "02:00", timezone: "UTC" }), start: FIRST, end: date(20), restate: { last: 7 },
    }, {
      load: {
        pool: "warehouse",
        run: async (ctx) => {
          loads.push([ctx.businessDate, ctx.trigger]);
          return loadDay(warehouse, ctx);
        },
      },
      pull: {
        pool: "warehouse",
        // no isBackfill here: the engine itself keeps the watermark still in a restatement
        run: async (ctx) => {
          const target = await openSQLite(warehouse);
          try {
            const r = await incrementalLoad({
              target, table: "orders_seen", columns: ORDERS, key: "order_id", watermarkColumn: "order_id", lookback: 0,
              store: ctx.watermarks, context: writeContextFrom(ctx),
              source: (since) => ({ sql: since === null ? sql`SELECT * FROM orders_src` : sql`SELECT * FROM orders_src WHERE order_id > ${since}` }),
            });
            return { written: r.rowsInserted };
          } finally {
            await target.close();
          }
        },
      },
      export: { after: ["load"], restate: false, run: (ctx) => void exports.push(ctx.businessDate) },
    });
    h = await ScheduleHarness.open([orders], `${FIRST}T00:00:00Z`);
    await h.engine.setPool("warehouse", 1);
    warehouse = join(h.dir, "warehouse.db");

    for (let n = 1; n <= 20; n++) {
      await addOrders(warehouse, ordersOf(n));
      if (n !== 8 && n !== 19) {
        const before = loads.length;
        await h.at(firesAt(n));
        // the newest day goes first, then its window
        expect(loads[before]).toEqual([date(n), "schedule"]);
        expect(loads.slice(before + 1).every(([d, t]) => d < date(n) && t === "restate")).toBe(true);
        continue;
      }
      // Day 8 (and 19): a row arrives late, after the scheduled run but before the restatements.
      h.clock.set(firesAt(n));
      await h.scheduler.tick();
      await h.work();
      const watermark = await h.store.getWatermark("orders", "pull");
      const late: [number, string, number] = n === 8 ? [9_001, date(5), 77] : [9_002, date(15), 88];
      await addOrders(warehouse, [late]);
      await h.at(firesAt(n));
      expect(await h.store.getWatermark("orders", "pull")).toBe(watermark);
    }

    const runs = await h.runs("orders");
    expect(runs).toHaveLength(20);
    for (const [i, run] of runs.entries()) {
      const n = i + 1;
      const restated = Math.min(7, 20 - n);
      expect(run.runId).toBe(`orders@${date(n)}`);
      expect(run.restateCount).toBe(restated);
      expect(run.trigger).toBe(restated > 0 ? "restate" : "schedule");
      const tries = (await h.store.listAttempts(run.runId, "load")).map((a) => a.tryNumber);
      expect(tries).toEqual(Array.from({ length: restated + 1 }, (_, k) => k + 1));
      expect(loads.filter(([d, t]) => d === date(n) && t === "schedule")).toHaveLength(1);
    }
    // the export ran once per day, never again
    expect(exports).toEqual(Array.from({ length: 20 }, (_, i) => date(i + 1)));

    // the late rows are in the target: 5 was restated 3 days after its day, 15 four days after
    const db = await openSQLite(warehouse);
    const lateRows = await db.query(sql`SELECT order_id, order_date FROM orders WHERE order_id > 9000 ORDER BY order_id`);
    await db.close();
    expect(lateRows).toEqual([{ order_id: 9_001, order_date: date(5) }, { order_id: 9_002, order_date: date(15) }]);

    // same content as one clean run per day over the final source
    const clean = join(h.dir, "clean.db");
    const source = await openSQLite(warehouse);
    await addOrders(clean, (await source.query(sql`SELECT order_id, order_date, amount FROM orders_src`)).map((r) => [Number(r.order_id), String(r.order_date), Number(r.amount)]));
    await source.close();
    for (let n = 1; n <= 20; n++) await loadDay(clean, { runId: `clean@${date(n)}`, pipelineId: "clean", taskId: "load", tryNumber: 1, businessDate: date(n), frozen: [] });
    expect(await contentHash(warehouse)).toBe(await contentHash(clean));

    // the watermark was moved by scheduled runs only: the last one saw every order
    expect(await h.store.getWatermark("orders", "pull")).toBe(9_002);

    const audit = await h.store.listAudit({ pipelineId: "orders", limit: 1000 });
    expect(audit.filter((a) => a.action === "restate")).toHaveLength(91 + 21);
    expect(audit.find((a) => a.action === "restate")).toMatchObject({ actor: "scheduler", details: { businessDate: date(13), after: date(20), tasks: ["load", "pull"] } }); // newest first, so 13 went last

    const ledger = await h.engine.expected("orders", { from: date(12), to: date(14) });
    expect(ledger.map((e) => [e.interval.businessDate, e.status, e.trigger, e.restateCount, e.lastRestatedAt])).toEqual([
      [date(12), "success", "restate", 7, firesAt(19)],
      [date(13), "success", "restate", 7, firesAt(20)],
    ]);
  });
});

describe("restatement edge cases", () => {
  const noop = () => {};
  const restating = (id: string, options: Partial<PipelineOptions> = {}, tasks: Record<string, TaskSpec> = { t: { run: noop } }) =>
    pipeline(id, { schedule: daily({ at: "02:00", timezone: "UTC" }), start: FIRST, restate: { last: 7 }, ...options }, tasks);
  const counts = async (id: string) => Object.fromEntries((await h.runs(id)).map((r) => [r.businessDate, r.restateCount]));

  it("refuses frozen days with their reason, once per day, as a skip and not a failure", async () => {
    const p = restating("closing");
    h = await ScheduleHarness.open([p], `${FIRST}T00:00:00Z`);
    for (let n = 1; n <= 6; n++) await h.at(firesAt(n));
    // the month is closed after day 6 ran: days 2 and 3 are frozen from now on
    const frozen = [{ from: date(2), to: date(3), owner: "controlling", reason: "August close signed off" }];
    const later = new Scheduler({ store: h.store, clock: h.clock, pipelines: [p], holder: "scheduler-1", frozen });
    for (let n = 7; n <= 9; n++) {
      h.clock.set(firesAt(n));
      await settle(later);
    }
    const byDate = Object.fromEntries((await h.runs("closing")).map((r) => [r.businessDate, r]));
    expect(byDate[date(2)]).toMatchObject({ state: "success", restateCount: 4, restateNote: `not restated after ${date(9)}: frozen ${date(2)}..${date(3)} by controlling: August close signed off` });
    expect(byDate[date(3)]).toMatchObject({ state: "success", restateCount: 3 });
    expect(byDate[date(4)]!.restateCount).toBe(5);
    const refusals = (await h.store.listAudit({ pipelineId: "closing", limit: 500 })).filter((a) => a.action === "restate-refused");
    expect(refusals.map((a) => [a.runId, a.details.after])).toEqual([
      [`closing@${date(2)}`, date(9)], [`closing@${date(3)}`, date(9)],
      [`closing@${date(2)}`, date(8)], [`closing@${date(3)}`, date(8)],
      [`closing@${date(2)}`, date(7)], [`closing@${date(3)}`, date(7)],
    ]);
    expect(refusals[0]!.reason).toBe(`not restated after ${date(9)}: frozen ${date(2)}..${date(3)} by controlling: August close signed off`);
    const ledger = await h.engine.expected("closing", { from: date(2), to: date(3) });
    expect(ledger[0]).toMatchObject({ status: "success", restateCount: 4, restateNote: expect.stringMatching(/August close/) });
  });

  it("never lets queued restatements hold back the newest day: its run is created on time and claimed first", async () => {
    const order: string[] = [];
    const p = restating("busy", { maxActiveRuns: 3 }, { t: { run: (ctx) => void order.push(`${ctx.businessDate} ${ctx.trigger}`), pool: "one" } });
    h = await ScheduleHarness.open([p], `${FIRST}T00:00:00Z`);
    await h.engine.setPool("one", 1);
    for (let n = 1; n <= 8; n++) await h.at(firesAt(n));
    for (let n = 9; n <= 12; n++) {
      // the scheduled run fires while the previous day's restatements are still queued
      h.clock.set(firesAt(n));
      await h.scheduler.tick();
      expect((await h.store.getRun(`busy@${date(n)}`))?.trigger).toBe("schedule");
      order.length = 0;
      await h.work(1);
      expect(order[0]).toBe(`${date(n)} schedule`);
      await h.scheduler.tick(); // restatements of the new window start, two at a time (the cap keeps a slot)
      expect(await h.store.countLiveRuns("busy")).toBeLessThanOrEqual(2);
    }
    await h.at(firesAt(12));
    expect((await counts("busy"))[date(11)]).toBe(1);
  });

  it("waits for an earlier run that is still live, and does not restate what ended after the newer day fired", async () => {
    let failOnce = true;
    const p = restating("slow", {}, {
      t: {
        retries: 1, retryDelay: "30h",
        run: (ctx) => {
          if (ctx.businessDate === date(3) && failOnce) {
            failOnce = false;
            throw new Error("partner file incomplete");
          }
        },
      },
    });
    h = await ScheduleHarness.open([p], `${FIRST}T00:00:00Z`);
    for (let n = 1; n <= 3; n++) await h.at(firesAt(n));
    expect((await h.store.getRun(`slow@${date(3)}`))!.state).toBe("running"); // waiting for its retry
    await h.at(firesAt(4)); // day 4 ran; day 3 is still live: not touched
    expect((await h.store.getRun(`slow@${date(3)}`))!.restateCount).toBe(0);
    await h.at(firesAt(3) + 30 * 3_600_000); // the retry succeeds, after day 4 fired: nothing to restate for day 4
    expect((await h.store.getRun(`slow@${date(3)}`))).toMatchObject({ state: "success", restateCount: 0 });
    await h.at(firesAt(5));
    // day 3's own run was live until after day 4 fired, so its window was folded into day 4's
    expect(await counts("slow")).toEqual({ [date(1)]: 3, [date(2)]: 2, [date(3)]: 1, [date(4)]: 1, [date(5)]: 0 });
  });

  it("restates a failed run (late data may fix it), and a failed restatement leaves the run failed with its history", async () => {
    let fixed = false;
    const p = restating("flaky", {}, { t: { run: (ctx) => { if (ctx.businessDate === date(2) && !fixed) throw new Error("no file yet"); } } });
    h = await ScheduleHarness.open([p], `${FIRST}T00:00:00Z`);
    await h.at(firesAt(2));
    await h.at(firesAt(3));
    expect((await h.store.getRun(`flaky@${date(2)}`))).toMatchObject({ state: "failed", restateCount: 1, trigger: "restate" });
    fixed = true;
    await h.at(firesAt(4));
    expect((await h.store.getRun(`flaky@${date(2)}`))).toMatchObject({ state: "success", restateCount: 2 });
    expect((await h.store.listAttempts(`flaky@${date(2)}`, "t")).map((a) => [a.tryNumber, a.state])).toEqual([[1, "failed"], [2, "failed"], [3, "success"]]);
  });

  it("in a catch-up burst restates nothing that the burst itself just ran, and nothing while paused", async () => {
    const p = restating("burst");
    h = await ScheduleHarness.open([p], `${FIRST}T00:00:00Z`);
    for (let n = 1; n <= 3; n++) await h.at(firesAt(n));
    await h.engine.pause("burst", { note: "vendor outage" });
    await h.at(firesAt(9));
    expect(await counts("burst")).toEqual({ [date(1)]: 2, [date(2)]: 1, [date(3)]: 0 });
    await h.engine.unpause("burst");
    await h.at(firesAt(9));
    // days 4..9 ran in the burst; only the days that ran before it and lie in day 9's window are restated
    expect(await counts("burst")).toEqual({
      [date(1)]: 2, [date(2)]: 2, [date(3)]: 1, [date(4)]: 0, [date(5)]: 0, [date(6)]: 0, [date(7)]: 0, [date(8)]: 0, [date(9)]: 0,
    });
  });

  it("with catch-up latest, restates only intervals that have a run", async () => {
    const p = restating("newest", { catchup: "latest" });
    h = await ScheduleHarness.open([p], `${FIRST}T00:00:00Z`);
    await h.at(firesAt(5));
    await h.at(firesAt(6));
    expect(await counts("newest")).toEqual({ [date(5)]: 1, [date(6)]: 0 });
  });

  it("keeps watermarks still in restatement and backfill runs, whatever the task asks, and says so in its log", async () => {
    let next = 0;
    const p = restating("marks", {}, { t: { run: async (ctx) => void (await ctx.watermarks.save("marks", "t", ++next)) } });
    h = await ScheduleHarness.open([p], `${FIRST}T00:00:00Z`);
    await h.at(firesAt(1));
    expect(await h.store.getWatermark("marks", "t")).toBe(1);
    await h.at(firesAt(2)); // day 2 saves 2, then day 1's restatement asks for 3
    expect(next).toBe(3);
    expect(await h.store.getWatermark("marks", "t")).toBe(2);
    const { text } = await h.engine.log(`marks@${date(1)}`, "t");
    expect(text).toMatch(/watermark of marks\.t kept where it is \(not moved to 3\): a restate run reads its own interval; only the schedule moves watermarks/);
    await h.engine.backfill("marks", { from: date(1), to: date(2), reprocess: "all", reason: "rebuild" });
    await h.at(firesAt(2));
    expect(next).toBe(5);
    expect(await h.store.getWatermark("marks", "t")).toBe(2);
  });

  it("leaves days a live backfill covers to the backfill", async () => {
    const p = restating("covered");
    h = await ScheduleHarness.open([p], `${FIRST}T00:00:00Z`);
    for (let n = 1; n <= 4; n++) await h.at(firesAt(n));
    const { backfill } = await h.engine.backfill("covered", { from: date(1), to: date(2), reprocess: "all", reason: "new column" });
    await h.engine.controlBackfill(backfill.backfillId, "pause");
    await h.at(firesAt(5));
    expect(await counts("covered")).toEqual({ [date(1)]: 3, [date(2)]: 2, [date(3)]: 2, [date(4)]: 1, [date(5)]: 0 });
    await h.engine.controlBackfill(backfill.backfillId, "resume");
    await h.at(firesAt(5));
    // the backfill reran days 1 and 2 after day 5 fired: they need no restatement for day 5
    expect((await h.runs("covered")).slice(0, 2).map((r) => [r.trigger, r.restateCount])).toEqual([["backfill", 3], ["backfill", 2]]);
    await h.at(firesAt(6));
    expect((await counts("covered"))[date(1)]).toBe(4);
  });
});
