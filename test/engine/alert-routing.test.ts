import { afterEach, describe, expect, it } from "vitest";
import { pipeline } from "../../src/core/pipeline/define.ts";
import { daily } from "../../src/core/time/index.ts";
import { FreshnessChecker } from "../../src/engine/freshness/checker.ts";
import { ScheduleHarness } from "../support/scheduling.ts";

let h: ScheduleHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const tasks = () => ({ load: { run: () => {} } });
const publishing = (dataset: string) => ({ load: { run: () => {} }, publish: { after: ["load" as const], publishes: dataset, run: () => ({}) } });

describe("routing incidents to notifiers", () => {
  it("chooses notifiers by pipeline, owner and severity, keeps the promise's own, and falls back to defaultNotify", async () => {
    const sales = pipeline("sales_daily", {
      schedule: daily({ at: "02:00", timezone: "UTC" }), start: "2026-09-01", owner: "finance", severity: { did_not_run: "critical" },
      promises: [{ dataset: "sales", deadline: "D+1 06:00", owner: "finance-data", severity: { sla_missed: "critical", late: "info" }, notify: ["mail"] }],
    }, publishing("sales"));
    const web = pipeline("web_daily", { schedule: daily({ at: "02:00", timezone: "UTC" }), start: "2026-09-01" }, tasks());
    h = await ScheduleHarness.open([sales, web], "2026-09-01T00:00:00Z");
    await h.at("2026-09-01T00:00:00Z"); // the scheduler records the graph versions: the promise exists from here
    await h.engine.pause("sales_daily");
    await h.engine.pause("web_daily");
    const checker = new FreshnessChecker({
      store: h.store, pipelines: h.pipelines, defaultNotify: ["log"],
      routes: [
        { match: { pipeline: "sales*", severity: "critical" }, notify: ["pd"] },
        { match: { owner: "finance" }, notify: ["chat"] },
        { match: { kind: ["run_failed"] }, notify: ["never"] },
      ],
    });
    await h.at("2026-09-02T06:30:00Z");
    await checker.check(h.clock.now());
    const notify = Object.fromEntries((await h.engine.incidents({ open: true })).map((i) => [i.key, i.notify]));
    expect(notify).toEqual({
      // The promise names mail; critical sales goes to pd; its owner is the promise's (finance-data), not the pipeline's.
      "sla_missed:sales:2026-09-01": ["mail", "pd"],
      // The pipeline's severity and owner: pd and chat, after the notifiers its promises name.
      "did_not_run:sales_daily:2026-09-01": ["mail", "pd", "chat"],
      // No route, no promise: defaultNotify.
      "did_not_run:web_daily:2026-09-01": ["log"],
    });
  });

  it("refuses a severity that is not one, naming the pipeline and the promise", () => {
    expect(() => pipeline("p", { schedule: daily({ at: "02:00" }), severity: "high" as never }, tasks())).toThrow(`pipeline p: severity: "high" is not a severity (critical, error, warning, info)`);
    expect(() => pipeline("p", { schedule: daily({ at: "02:00" }), promises: [{ dataset: "d", deadline: "D+1 06:00", severity: { late_ish: "info" } as never }] }, publishing("d")))
      .toThrow(`pipeline p: promise d: severity: "late_ish" is not an incident kind`);
  });
});
