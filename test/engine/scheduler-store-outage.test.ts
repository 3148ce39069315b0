import { eventsLoggedTo } from "../support/events.ts";
import { afterEach, describe, expect, it } from "vitest";
import { pipeline } from "../../src/core/pipeline/define.ts";
import { daily } from "../../src/core/time/index.ts";
import { Scheduler } from "../../src/engine/scheduler/scheduler.ts";
import type { Store } from "../../src/store/port.ts";
import { ScheduleHarness } from "../support/scheduling.ts";

let h: ScheduleHarness;
afterEach(async () => h?.close());

describe("a scheduler whose state store is out of reach", () => {
  it("tries again at a steady pause (its tick, at most 2 s) for as long as it runs, and carries on once the store is back", async () => {
    const p = pipeline("orders", { schedule: daily({ at: "02:00", timezone: "Europe/London" }), start: "2026-09-01" }, { load: { run: () => {} } });
    h = await ScheduleHarness.open([p], "2026-09-02T03:00:00Z");
    const failedAt: number[] = [];
    const flaky = new Proxy(h.store, {
      get(target, property) {
        if (property === "tryLead" && failedAt.length < 5) {
          return async () => {
            failedAt.push(h.clock.now());
            throw new Error("connect ECONNREFUSED 127.0.0.1:5432");
          };
        }
        const value = Reflect.get(target, property) as unknown;
        return typeof value === "function" ? value.bind(target) : value;
      },
    }) as Store;
    const logs: string[] = [];
    const stop = new AbortController();
    const scheduler = new Scheduler({ store: flaky, clock: h.clock, pipelines: [p], holder: "s1", tickMs: 1_500, events: eventsLoggedTo(logs) });
    const running = scheduler.run(stop.signal);
    try {
      for (const deadline = Date.now() + 10_000; (await h.store.listRuns({ pipelineId: "orders" })).length === 0; ) {
        if (Date.now() > deadline) throw new Error(`no run after 10 s; failed tries at ${failedAt.join(", ")}`);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    } finally {
      stop.abort();
      await running;
    }
    expect(failedAt.slice(1).map((at, i) => at - failedAt[i]!)).toEqual([1_500, 1_500, 1_500, 1_500]);
    expect(logs.filter((l) => l.startsWith("tick failed, trying again: connect ECONNREFUSED"))).toHaveLength(5);
    expect((await h.store.getLead("scheduler"))?.holder).toBe("s1");
  });
});
