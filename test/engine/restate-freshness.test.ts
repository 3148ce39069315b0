import { afterEach, describe, expect, it } from "vitest";
import { pipeline } from "../../src/core/pipeline/define.ts";
import { daily } from "../../src/core/time/index.ts";
import { FreshnessChecker } from "../../src/engine/freshness/checker.ts";
import { ScheduleHarness } from "../support/scheduling.ts";

let h: ScheduleHarness;
afterEach(async () => h?.close());

describe("freshness of restated days", () => {
  it("records each republication with what it wrote, never calls a day first published on time late, and alerts on a failed restatement", async () => {
    const orders: Record<string, number> = { "2026-09-01": 3 };
    let partnerDown = false;
    const p = pipeline(
      "shop_orders",
      {
        schedule: daily({ at: "02:00", timezone: "Europe/London" }), start: "2026-09-01", restate: { last: 3 },
        promises: [{ dataset: "orders_daily", deadline: "D+1 06:00", slo: "D+1 05:30", notify: ["log"] }],
      },
      {
        load: { run: (ctx) => { if (partnerDown && ctx.trigger === "restate") throw new Error("partner API down"); } },
        publish: { after: ["load"], publishes: "orders_daily", run: (ctx) => ({ rows_written: orders[ctx.businessDate] ?? 1 }) },
      },
    );
    h = await ScheduleHarness.open([p], "2026-09-01T00:00:00Z");
    const checker = new FreshnessChecker({ store: h.store, pipelines: [p] });
    const at = async (iso: string) => {
      await h.at(iso);
      await checker.check(h.clock.now());
    };
    await at("2026-09-02T01:00:00Z"); // 02:00 London: 09-01 published on time
    orders["2026-09-01"] = 5; // two orders arrive late
    await at("2026-09-03T01:00:00Z"); // 09-02 runs, then 09-01 is restated: a day after its deadline
    const history = await h.store.freshnessHistory("orders_daily", "2026-09-01");
    expect(history.map((x) => [x.trigger, x.summary, x.publishedAt])).toEqual([
      ["schedule", { rows_written: 3 }, Date.parse("2026-09-02T01:00:00Z")],
      ["restate", { rows_written: 5 }, Date.parse("2026-09-03T01:00:00Z")],
    ]);
    expect((await h.store.listIncidents({})).map((i) => i.kind)).toEqual([]);
    const report = await h.engine.freshness();
    expect(report.datasets[0]!.days.find((d) => d.businessDate === "2026-09-01")).toMatchObject({ status: "on_time", publishedAt: Date.parse("2026-09-03T01:00:00Z") });

    partnerDown = true;
    await at("2026-09-04T01:00:00Z"); // 09-03 runs; the restatements of 09-01 and 09-02 fail
    const incidents = await h.store.listIncidents({ open: true });
    expect(incidents.map((i) => i.kind).sort()).toEqual(["restate_failed", "restate_failed"]);
    const first = incidents.find((i) => i.businessDate === "2026-09-01")!;
    expect(first.message).toBe(
      "restatement 2 of shop_orders@2026-09-01 failed: load after 3 tries: partner API down; " +
        "the previous publication stands (orders_daily for 2026-09-01 published at 2026-09-03 02:00 Europe/London)",
    );
    const [row] = await h.store.listFreshness("orders_daily", "2026-09-01", "2026-09-01");
    expect(row).toMatchObject({ publishedAt: Date.parse("2026-09-03T01:00:00Z"), summary: { rows_written: 5 } });

    partnerDown = false;
    await at("2026-09-05T01:00:00Z"); // the next restatement succeeds and resolves it
    expect((await h.store.listIncidents({ open: true })).map((i) => i.kind)).toEqual([]);
  });
});
