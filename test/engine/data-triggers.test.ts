import { afterEach, describe, expect, it } from "vitest";
import { pipeline } from "../../src/core/pipeline/define.ts";
import { addDays } from "../../src/core/time/dates.ts";
import { daily, monthly, weekly } from "../../src/core/time/index.ts";
import { ScheduleHarness } from "../support/scheduling.ts";

let h: ScheduleHarness;
afterEach(async () => h?.close());

const timezone = "Europe/London"; // GMT in November: local times equal UTC

describe("data triggers on the consumer's own intervals", () => {
  it("run a weekly and a monthly consumer of a daily producer once per interval, and rerun it when a day inside is republished", async () => {
    const seen: string[] = [];
    // The publishing task names no `produces`: publishing fact_orders produces it.
    const orders = pipeline("orders", {
      schedule: daily({ at: "02:00", timezone }), start: "2026-11-02",
      promises: [{ dataset: "fact_orders", deadline: "D+1 06:00" }],
    }, { publish: { publishes: "fact_orders", run: () => ({ rows: 1 }) } });
    const week = pipeline("weekly_rollup", { schedule: weekly({ on: "monday", at: "06:00", timezone }), start: "2026-11-02", triggerOn: ["fact_orders"] }, {
      roll: { run: (ctx) => void seen.push(`week ${ctx.businessDate} try ${ctx.tryNumber}`) },
    });
    const month = pipeline("monthly_rollup", { schedule: monthly({ day: 1, at: "06:00", timezone }), start: "2026-11-01", triggerOn: ["fact_orders"] }, {
      roll: { run: (ctx) => void seen.push(`month ${ctx.businessDate} try ${ctx.tryNumber}`) },
    });
    expect(orders.tasks.get("publish")!.produces).toEqual(["fact_orders"]);
    h = await ScheduleHarness.open([orders, week, month], "2026-11-02T00:00:00Z");
    const runs = async (id: string) => (await h.runs(id)).map((r) => [r.businessDate, r.trigger, r.state]);

    // Day by day, as in production: each day is published at 02:00 the next morning.
    for (let d = "2026-11-03"; d <= "2026-11-09"; d = addDays(d, 1)) await h.at(`${d}T03:00:00Z`);
    expect(await h.store.listDatasetEvents({ dataset: "fact_orders" })).toHaveLength(7);
    expect(await runs("weekly_rollup")).toEqual([]); // the week 11-02..11-08 is complete but not due before Monday 06:00
    await h.at("2026-11-09T06:00:00Z");
    expect(await runs("weekly_rollup")).toEqual([["2026-11-02", "data", "success"]]);
    expect(seen).toEqual(["week 2026-11-02 try 1"]); // seven events, one run

    // Wednesday 11-04 is republished after the rollup ran: the week that contains it runs again.
    await h.at("2026-11-10T03:00:00Z"); // 11-09 is published too: it belongs to next week, not due yet
    await h.engine.runForDate("orders", "2026-11-04", { reason: "late refunds" });
    await h.at("2026-11-10T10:00:00Z");
    expect(await runs("weekly_rollup")).toEqual([["2026-11-02", "data", "success"]]);
    expect(seen).toEqual(["week 2026-11-02 try 1", "week 2026-11-02 try 2"]);
    const [rerun] = (await h.store.listAudit({ pipelineId: "weekly_rollup" })).filter((a) => a.action === "data-rerun");
    expect(rerun).toMatchObject({ runId: "weekly_rollup@2026-11-02T00:00Z--2026-11-09T00:00Z", details: { businessDate: "2026-11-02", dates: ["2026-11-04"] } });

    // The rest of November: one monthly run on 1 December, and a republished day reruns its month and its week.
    for (let d = "2026-11-11"; d <= "2026-12-01"; d = addDays(d, 1)) await h.at(`${d}T03:00:00Z`);
    expect(seen.filter((s) => s.startsWith("month"))).toEqual([]);
    await h.at("2026-12-01T06:00:00Z");
    expect(await runs("monthly_rollup")).toEqual([["2026-11-01", "data", "success"]]);
    expect((await h.runs("weekly_rollup")).map((r) => r.businessDate)).toEqual(["2026-11-02", "2026-11-09", "2026-11-16", "2026-11-23"]);
    const before = seen.length;
    await h.engine.runForDate("orders", "2026-11-15", { reason: "restated" });
    await h.at("2026-12-01T07:00:00Z");
    expect(seen.slice(before).sort()).toEqual(["month 2026-11-01 try 2", "week 2026-11-09 try 2"]);
    expect(seen.filter((s) => s.endsWith("try 1"))).toEqual([
      "week 2026-11-02 try 1", "week 2026-11-09 try 1", "week 2026-11-16 try 1", "week 2026-11-23 try 1", "month 2026-11-01 try 1",
    ]);
  });
});
