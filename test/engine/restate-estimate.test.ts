import { afterEach, describe, expect, it } from "vitest";
import { pipeline } from "../../src/core/pipeline/define.ts";
import { daily, hourly } from "../../src/core/time/index.ts";
import { estimateRestatement } from "../../src/engine/backfill/restate-estimate.ts";
import { ScheduleHarness } from "../support/scheduling.ts";

const noop = () => {};
const shop = pipeline("shop", { schedule: daily({ at: "02:00", timezone: "UTC" }), start: "2026-09-01", restate: { last: 7 }, maxActiveRuns: 3 }, {
  load: { run: noop, pool: "warehouse" },
  check: { after: ["load"], run: noop },
  export: { after: ["check"], run: noop, restate: false },
});

let h: ScheduleHarness | undefined;
afterEach(async () => h?.close());

describe("the cost of a restatement window", () => {
  it("is the window times one run of the tasks that take part, at recent durations", () => {
    const durations = new Map([["load", [20_000, 22_000, 200_000]], ["check", [4_000]], ["export", [600_000]]]);
    const estimate = estimateRestatement(shop, durations, new Map([["warehouse", 1]]))!;
    // p50: load 22 s + check 4 s = 26 s a run; the export (10 min) is not repeated
    expect(estimate).toMatchObject({ last: 7, perRunP50Ms: 26_000, addedPerIntervalMs: 182_000, optedOut: ["export"], tasksWithoutHistory: [] });
    // two runs at once (the cap of 3 keeps a slot), but one warehouse slot: 7 loads of 22 s one after another
    expect(estimate.wallP50Ms).toBe(154_000);
    expect(estimate.summary).toBe("restating 7 days adds about 7x the daily run: 3m2s a day at recent durations (p50 26s a run, the window done in about 2m34s; not restated: export)");
  });

  it("says so when there is no history yet, names intervals by the schedule, and is null without the option", () => {
    expect(estimateRestatement(shop, new Map(), new Map())!.summary).toBe(
      "restating 7 days adds about 7x the daily run; no successful attempt yet to say how long (not restated: export)",
    );
    const hourlyOne = pipeline("h", { schedule: hourly({ timezone: "UTC" }), restate: { last: 1 } }, { t: { run: noop } });
    expect(estimateRestatement(hourlyOne, new Map([["t", [90_000]]]), new Map())!.summary).toBe(
      "restating 1 hour adds about 1x the hourly run: 1m30s an hour at recent durations (p50 1m30s a run, the window done in about 1m30s)",
    );
    expect(estimateRestatement(pipeline("plain", { schedule: daily({ at: "02:00" }) }, { t: { run: noop } }), new Map(), new Map())).toBeNull();
  });

  it("is what idem next shows, read from the state store", async () => {
    h = await ScheduleHarness.open([shop], "2026-09-01T00:00:00Z");
    await h.engine.setPool("warehouse", 1);
    await h.at("2026-09-03T02:00:00Z");
    const estimate = await h.engine.restateEstimate("shop");
    // the fake clock does not move during a task: every attempt took 0 ms
    expect(estimate).toMatchObject({ last: 7, perRunP50Ms: 0, optedOut: ["export"] });
    expect(await h.engine.restateEstimate("shop")).toEqual(estimate);
  });
});
