import { eventsLoggedTo } from "../support/events.ts";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { pipeline } from "../../src/core/pipeline/define.ts";
import { daily } from "../../src/core/time/index.ts";
import { AlertDispatcher } from "../../src/engine/freshness/alert-dispatcher.ts";
import { Watchdog } from "../../src/engine/freshness/watchdog.ts";
import { Scheduler } from "../../src/engine/scheduler/scheduler.ts";
import { ScheduleHarness } from "../support/scheduling.ts";

let h: ScheduleHarness;
afterEach(async () => h?.close());

const GRACE = 10 * 60_000;
const london = (at = "02:00") => daily({ at, timezone: "Europe/London" });
const noop = () => {};

function watchdog(holder = "worker w1", pipelines = h.pipelines) {
  return new Watchdog({ store: h.store, clock: h.clock, pipelines, holder, notifiers: {}, defaultNotify: [], intervalMs: 15_000, graceMs: GRACE });
}

async function incidents() {
  return (await h.store.listIncidents({ open: false, limit: 100 })).map((i) => [i.kind, i.resolvedAt === null ? "open" : "resolved"]);
}

describe("the watchdog", () => {
  it("says who runs the checker and how fresh its last pass is, and whether a scheduler leads", async () => {
    h = await ScheduleHarness.open([pipeline("p", { schedule: london(), start: "2026-09-01" }, { t: { run: noop } })], "2026-09-02T00:00:00Z");
    expect(await h.engine.health()).toMatchObject({ status: "none", holder: null, healthy: false });
    await watchdog("worker w1").pass();
    h.clock.advance(4_000);
    let health = await h.engine.health();
    expect(health).toMatchObject({ status: "ok", holder: "worker w1", lastPassAgeMs: 4_000, healthy: false, scheduler: { live: false } });
    expect(health.message).toBe("checker run by worker w1, last pass 4s ago; no scheduler has ever held the lead: is a scheduler running?");
    await h.scheduler.tick();
    health = await h.engine.health();
    expect(health).toMatchObject({ status: "ok", healthy: true, scheduler: { live: true, holder: "scheduler-1" } });
    h.clock.advance(61_000);
    health = await h.engine.health();
    expect(health).toMatchObject({ status: "stale", healthy: false, lastPassAgeMs: 65_000 });
    expect(health.message).toMatch(/^the checker's last pass was 65s ago \(worker w1\): nothing checks the promises or sends alerts; no scheduler has held the lead since 2026-09-02 00:00:04 UTC \(last: scheduler-1\)$/);
  });

  it("passes in one process at a time, under its own lease; another takes over when it stops", async () => {
    h = await ScheduleHarness.open([pipeline("p", { schedule: london(), start: "2026-09-01" }, { t: { run: noop } })], "2026-09-02T00:00:00Z");
    const first = watchdog("scheduler s1");
    const second = watchdog("worker w2");
    expect(await first.pass()).toMatchObject({ leader: true });
    expect(await second.pass()).toMatchObject({ leader: false, holder: "scheduler s1", result: null });
    h.clock.advance(15_000);
    expect(await first.pass()).toMatchObject({ leader: true });
    h.clock.advance(45_001); // three intervals without a pass: the lease lapses
    expect(await second.pass()).toMatchObject({ leader: true });
    expect((await h.engine.health()).holder).toBe("worker w2");
  });

  it("opens one incident for a scheduler stopped past a due time, and resolves it when one leads again; the late run opens none", async () => {
    h = await ScheduleHarness.open([pipeline("shop", { schedule: london("07:23"), start: "2026-09-01" }, { t: { run: noop } })], "2026-09-02T06:30:00Z");
    await h.at("2026-09-02T06:30:00Z"); // 07:30 London: the run for 09-01 is created
    const w = watchdog();
    await w.pass();
    h.clock.set("2026-09-02T06:12:00Z"); // 07:12 London ...
    h.clock.set("2026-09-03T06:12:00Z"); // the next day: the scheduler ticks a last time at 07:12 and dies
    await h.scheduler.tick();
    for (let t = Date.parse("2026-09-03T06:12:15Z"); t <= Date.parse("2026-09-03T07:30:00Z"); t += 15_000) {
      h.clock.set(t);
      await w.pass();
    }
    expect(await incidents()).toEqual([["scheduler_down", "open"]]);
    const [down] = await h.store.listIncidents({ open: true });
    expect(down!.message).toBe("scheduler down: no scheduler has held the lead since 2026-09-03 06:12 UTC (last: scheduler-1); no scheduled run is created and no backfill advances");
    const ledger = await h.engine.expected("shop", { from: "2026-09-02", to: "2026-09-03" });
    expect(ledger.map((e) => [e.status, e.cause])).toEqual([["missing", "no_scheduler"]]);
    const restarted = new Scheduler({ store: h.store, clock: h.clock, pipelines: h.pipelines, holder: "scheduler-2" });
    await restarted.tick(); // takes the lead and creates the late run
    await w.pass();
    h.clock.advance(15_000);
    await w.pass();
    expect(await incidents()).toEqual([["scheduler_down", "resolved"]]);
    expect((await h.store.listIncidents({ open: false }))[0]!.resolution).toBe("scheduler scheduler-2 leads again");
  });

  it("does not call a catch-up under the run cap missing, but calls a scheduler that does not advance a pipeline stalled", async () => {
    const capped = pipeline("capped", { schedule: london(), start: "2026-08-01", maxActiveRuns: 3 }, { t: { run: noop } });
    const orphan = pipeline("orphan", { schedule: london(), start: "2026-09-01" }, { t: { run: noop } });
    h = await ScheduleHarness.open([capped, orphan], "2026-09-10T12:00:00Z");
    // This scheduler does not load "orphan" (an older deployment, say).
    const scheduler = new Scheduler({ store: h.store, clock: h.clock, pipelines: [capped], holder: "scheduler-1" });
    await scheduler.tick();
    const w = watchdog("worker w1", [capped, orphan]);
    const opened: string[] = [];
    const causes = new Set<string | null>();
    for (let i = 0; i < 150; i++) {
      h.clock.advance(5_000);
      // Runs end now and then, and the watchdog sometimes looks before the scheduler refills the cap.
      if (i % 3 === 0) await h.work();
      opened.push(...(await w.pass()).result!.opened);
      const [entry] = await h.engine.expected("capped", { from: "2026-09-08", to: "2026-09-09" });
      if (!entry!.runId) causes.add(entry!.cause);
      await scheduler.tick();
    }
    expect(causes).toEqual(new Set(["run_cap", "catching_up"]));
    expect(opened.filter((k) => k.startsWith("did_not_run:capped"))).toEqual([]);
    expect(opened.filter((k) => k.startsWith("did_not_run:orphan")).length).toBe(7); // the checker looks back 7 days
    const incident = (await h.store.listIncidents({ open: true })).find((i) => i.key === "did_not_run:orphan:2026-09-03")!;
    expect(incident.message).toMatch(/likely cause: scheduler scheduler-1 leads but has not advanced this pipeline for \d+s although the run cap has room \(does it load this pipeline\?\)$/);
  });

  it("hands a command notifier its argv as written: a shell it starts expands $IDEM_ALERT_KEY from the environment", async () => {
    h = await ScheduleHarness.open([], "2026-09-02T00:00:00Z");
    const out = join(h.dir, "alerts.log");
    await h.store.openIncident({ key: "k1", kind: "did_not_run", dataset: null, pipelineId: null, businessDate: null, runId: null, message: "it's $(true) broken; rm -rf /", notify: ["page"], at: h.clock.now() });
    const logs: string[] = [];
    const dispatcher = new AlertDispatcher({
      store: h.store, clock: h.clock, events: eventsLoggedTo(logs), env: { PATH: process.env.PATH, OUT: out },
      notifiers: { page: { command: ["bash", "-c", 'echo "$IDEM_ALERT_EVENT $IDEM_ALERT_KEY $IDEM_ALERT_MESSAGE" >> "$OUT"'] } },
    });
    expect(await dispatcher.deliverDue()).toBe(1);
    expect(logs).toEqual([]);
    expect(readFileSync(out, "utf8")).toBe("open k1 it's $(true) broken; rm -rf /\n");
  });
});
