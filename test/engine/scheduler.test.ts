import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { pipeline } from "../../src/core/pipeline/define.ts";
import { daily, hourly } from "../../src/core/time/index.ts";
import { fileExists } from "../../src/engine/sensors/checks.ts";
import { Scheduler } from "../../src/engine/scheduler/scheduler.ts";
import { ScheduleHarness } from "../support/scheduling.ts";

let h: ScheduleHarness;
afterEach(async () => h?.close());

const london = (at = "02:00") => daily({ at, timezone: "Europe/London" });
const noop = () => {};

describe("runs from schedules", () => {
  it("creates one run per due interval, oldest first, under the run cap", async () => {
    const p = pipeline("orders", { schedule: london(), start: "2026-09-01", maxActiveRuns: 3 }, { load: { run: noop } });
    h = await ScheduleHarness.open([p], "2026-09-01T00:00:00Z");
    await h.at("2026-09-10T03:00:00Z");
    const runs = await h.runs("orders");
    expect(runs.map((r) => r.businessDate)).toEqual([
      "2026-09-01", "2026-09-02", "2026-09-03", "2026-09-04", "2026-09-05",
      "2026-09-06", "2026-09-07", "2026-09-08", "2026-09-09",
    ]);
    expect(runs.every((r) => r.state === "success" && r.trigger === "schedule")).toBe(true);
    expect(h.mostLiveRuns.get("orders")).toBe(3);
  });

  it("does not run an interval before it fires", async () => {
    const p = pipeline("orders", { schedule: london("06:00"), start: "2026-09-01" }, { load: { run: noop } });
    h = await ScheduleHarness.open([p], "2026-09-01T00:00:00Z");
    await h.at("2026-09-02T04:59:00Z"); // 05:59 in London, D+1
    expect(await h.runs("orders")).toEqual([]);
    await h.at("2026-09-02T05:00:00Z");
    expect((await h.runs("orders")).map((r) => r.businessDate)).toEqual(["2026-09-01"]);
  });

  it("with catch-up latest, runs only the newest due interval and records the rest as skipped", async () => {
    const p = pipeline("latest", { schedule: london(), start: "2026-09-01", catchup: "latest" }, { load: { run: noop } });
    h = await ScheduleHarness.open([p], "2026-09-01T00:00:00Z");
    await h.at("2026-09-06T03:00:00Z");
    expect((await h.runs("latest")).map((r) => r.businessDate)).toEqual(["2026-09-05"]);
    const ledger = await h.engine.expected("latest", { from: "2026-09-01", to: "2026-09-07" });
    expect(ledger.map((e) => [e.interval.businessDate, e.status])).toEqual([
      ["2026-09-01", "skipped"], ["2026-09-02", "skipped"], ["2026-09-03", "skipped"], ["2026-09-04", "skipped"],
      ["2026-09-05", "success"], ["2026-09-06", "not_due"],
    ]);
    expect(ledger[0]!.note).toMatch(/catch-up "latest"/);
    await h.at("2026-09-07T03:00:00Z");
    expect((await h.runs("latest")).map((r) => r.businessDate)).toEqual(["2026-09-05", "2026-09-06"]);
  });

  it("creates nothing while paused, shows the gap as missing, and catches up on unpause", async () => {
    const p = pipeline("paused", { schedule: london(), start: "2026-09-01", maxActiveRuns: 2 }, { load: { run: noop } });
    h = await ScheduleHarness.open([p], "2026-09-01T00:00:00Z");
    await h.engine.pause("paused", { note: "vendor outage", actor: "ana" });
    await h.at("2026-09-05T03:00:00Z");
    expect(await h.runs("paused")).toEqual([]);
    const ledger = await h.engine.expected("paused", { from: "2026-09-01", to: "2026-09-05" });
    expect(ledger.map((e) => e.status)).toEqual(["missing", "missing", "missing", "missing"]);
    expect(ledger[0]!.note).toBe("pipeline is paused (vendor outage)");
    expect(await h.engine.why("paused@2026-09-02")).toEqual([
      "run paused@2026-09-02 does not exist yet",
      "pipeline paused is paused: vendor outage",
    ]);
    await h.engine.unpause("paused", { actor: "ana", note: "vendor back" });
    await h.at("2026-09-05T03:00:00Z");
    expect((await h.runs("paused")).map((r) => r.businessDate)).toEqual(["2026-09-01", "2026-09-02", "2026-09-03", "2026-09-04"]);
    expect(h.mostLiveRuns.get("paused")).toBe(2);
    const audit = await h.store.listAudit({ pipelineId: "paused" });
    expect(audit.map((a) => [a.action, a.actor, a.reason])).toEqual([["unpause", "ana", "vendor back"], ["pause", "ana", "vendor outage"]]);
  });

  it("runs each London day once across both DST changes, firing at 01:30 local", async () => {
    const fired: Record<string, string> = {};
    const p = pipeline("dst", { schedule: london("01:30"), start: "2026-03-27" }, {
      look: { run: (ctx) => void (fired[ctx.businessDate] = `${ctx.interval.start.toString()} .. ${ctx.interval.end.toString()}`) },
    });
    h = await ScheduleHarness.open([p], "2026-03-27T00:00:00Z");
    for (let day = 0; day < 5; day++) await h.at(Date.parse("2026-03-28T00:00:00Z") + day * 86_400_000 + 3 * 3_600_000);
    expect((await h.runs("dst")).map((r) => r.businessDate)).toEqual(["2026-03-27", "2026-03-28", "2026-03-29", "2026-03-30", "2026-03-31"]);
    // the spring-forward day is 23 hours long
    expect(fired["2026-03-29"]).toBe("2026-03-29T00:00:00+00:00[Europe/London] .. 2026-03-30T00:00:00+01:00[Europe/London]");
    const autumn = pipeline("autumn", { schedule: london("01:30"), start: "2026-10-24" }, { look: { run: noop } });
    await h.close();
    h = await ScheduleHarness.open([autumn], "2026-10-24T00:00:00Z");
    // 01:30 happens twice on 2026-10-25; the run for 10-24 fires at the first one, and only once.
    await h.at("2026-10-25T00:30:00Z"); // 01:30 BST, the first of the two
    expect((await h.runs("autumn")).map((r) => r.businessDate)).toEqual(["2026-10-24"]);
    await h.at("2026-10-25T01:30:00Z"); // 01:30 GMT, the second: no second run
    expect((await h.runs("autumn")).map((r) => r.businessDate)).toEqual(["2026-10-24"]);
  });

  it("never creates a second run when the clock jumps back, and catches up when it jumps forward", async () => {
    const p = pipeline("ntp", { schedule: hourly({ timezone: "UTC" }), start: "2026-09-01T00:00:00Z" }, { t: { run: noop } });
    h = await ScheduleHarness.open([p], "2026-09-01T00:00:00Z");
    await h.at("2026-09-01T05:00:00Z");
    expect(await h.runs("ntp")).toHaveLength(5);
    await h.at("2026-09-01T02:30:00Z"); // NTP pulled the clock back
    await h.at("2026-09-01T05:00:00Z");
    expect(await h.runs("ntp")).toHaveLength(5);
    await h.at("2026-09-01T09:00:00Z");
    const runs = await h.runs("ntp");
    expect(runs).toHaveLength(9);
    expect(new Set(runs.map((r) => r.intervalStart)).size).toBe(9);
  });

  it("keeps a run going from where it was after a scheduler restart", async () => {
    const p = pipeline("restart", { schedule: london(), start: "2026-09-01", maxActiveRuns: 2 }, { t: { run: noop } });
    h = await ScheduleHarness.open([p], "2026-09-01T00:00:00Z");
    h.clock.set("2026-09-08T03:00:00Z");
    await h.scheduler.tick(); // creates two runs, then "dies"
    const again = new Scheduler({ store: h.store, clock: h.clock, pipelines: [p], holder: "scheduler-1" });
    for (let i = 0; i < 10; i++) {
      await again.tick();
      await h.work();
    }
    const runs = await h.runs("restart");
    expect(runs.map((r) => r.businessDate)).toEqual(["2026-09-01", "2026-09-02", "2026-09-03", "2026-09-04", "2026-09-05", "2026-09-06", "2026-09-07"]);
  });
});

describe("limits", () => {
  it("serializes a pool of one across runs and pipelines", async () => {
    let inPool = 0;
    let most = 0;
    const guarded = async () => {
      inPool++;
      most = Math.max(most, inPool);
      await new Promise((r) => setTimeout(r, 2));
      inPool--;
    };
    const a = pipeline("a", { schedule: london(), start: "2026-09-01" }, { write: { run: guarded, pool: "warehouse" } });
    const b = pipeline("b", { schedule: london(), start: "2026-09-01" }, { write: { run: guarded, pool: "warehouse" }, free: { run: noop } });
    h = await ScheduleHarness.open([a, b], "2026-09-01T00:00:00Z");
    await h.engine.setPool("warehouse", 1, { actor: "ops" });
    await h.at("2026-09-06T03:00:00Z");
    expect(most).toBe(1);
    expect((await h.runs("a")).every((r) => r.state === "success")).toBe(true);
    expect((await h.runs("b")).every((r) => r.state === "success")).toBe(true);
  });

  it("lets a small task use free slots, but not forever ahead of a larger one", async () => {
    const big = pipeline("big", {}, { t: { run: noop, pool: "p", slots: 2 } });
    h = await ScheduleHarness.open([big], "2026-09-01T00:00:00Z");
    await h.engine.setPool("p", 2);
    const { store, clock } = h;
    // a blocker holds one slot, a big task (2 slots) waits, a small one (1 slot) arrives later
    const newRun = (id: string, slots: number, at: number) =>
      store.createRunIfAbsent({
        runId: `big@${id}`, pipelineId: "big", intervalStart: at, intervalEnd: at + 1, businessDate: "2026-09-01",
        graphVersion: big.version, trigger: "manual", triggeredBy: null, reason: null, params: {}, createdAt: at,
        tasks: [{ taskId: "t", hasUpstream: false, triggerRule: "all_success", maxTries: 1, pool: "p", slots, priority: 0 }],
      });
    const t0 = clock.now();
    await newRun("blocker", 1, t0);
    const claim = (now: number) => store.claimReady({ workerId: "w", pid: 1, limit: 10, now, leaseMs: 60_000, logDir: "/nonexistent/logs", limits: { starvationMs: 60_000 } });
    expect((await claim(t0)).map((c) => c.runId)).toEqual(["big@blocker"]);
    await newRun("large", 2, t0 + 1);
    await newRun("small", 1, t0 + 2);
    expect((await claim(t0 + 10)).map((c) => c.runId)).toEqual(["big@small"]);
    await newRun("small2", 1, t0 + 20);
    // the large one has now waited over a minute: the free slot is kept for it
    expect(await claim(t0 + 61_000)).toEqual([]);
    const why = await h.engine.why("big@large");
    expect(why).toEqual([expect.stringMatching(/^t: queued; pool p full \(2\/2 slots, held by big@blocker t, big@small t\)/)]);
  });
});

describe("retries without sleeping workers", () => {
  it("puts a failed task up for retry at its backoff time and runs it when that time comes", async () => {
    const tries: string[] = [];
    const p = pipeline("flaky", { schedule: london(), start: "2026-09-01", end: "2026-09-01" }, {
      fetch: {
        retries: 2, retryDelay: "5m", backoff: "exponential",
        run: (ctx) => {
          tries.push(new Date(h.clock.now()).toISOString());
          if (ctx.tryNumber < 3) throw new Error("vendor API down");
        },
      },
    });
    h = await ScheduleHarness.open([p], "2026-09-01T00:00:00Z");
    await h.at("2026-09-02T01:00:00Z");
    expect(await h.engine.why("flaky@2026-09-01")).toEqual(["fetch: retry at 2026-09-02 02:05 Europe/London (try 1 of 3 failed: vendor API down)"]);
    await h.at("2026-09-02T01:05:00Z");
    await h.at("2026-09-02T01:14:59Z");
    await h.at("2026-09-02T01:15:00Z");
    expect(tries).toEqual(["2026-09-02T01:00:00.000Z", "2026-09-02T01:05:00.000Z", "2026-09-02T01:15:00.000Z"]);
    expect((await h.runs("flaky"))[0]!.state).toBe("success");
  });
});

describe("sensors", () => {
  it("poke in reschedule mode, holding no pool slot between pokes, and soft-fail to a skip", async () => {
    const p = pipeline("waits", { schedule: london(), start: "2026-09-01", end: "2026-09-01" }, {
      wait_file: {
        sensor: fileExists((ctx) => `/nonexistent/${ctx.businessDate}.csv`),
        pokeInterval: "10m", sensorTimeout: "1h", softFail: true, pool: "sensors",
      },
      load: { after: ["wait_file"], run: noop },
    });
    h = await ScheduleHarness.open([p], "2026-09-01T00:00:00Z");
    await h.engine.setPool("sensors", 1);
    await h.at("2026-09-02T01:00:00Z");
    const sensor = (await h.store.listTaskInstances("waits@2026-09-01")).find((t) => t.taskId === "wait_file");
    expect(sensor).toMatchObject({ state: "up_for_reschedule", tryNumber: 1 });
    expect((await h.store.listPools())[0]!.used).toBe(0);
    for (let m = 10; m <= 70; m += 10) await h.at(Date.parse("2026-09-02T01:00:00Z") + m * 60_000);
    const tasks = Object.fromEntries((await h.store.listTaskInstances("waits@2026-09-01")).map((t) => [t.taskId, [t.state, t.reason, t.tryNumber]]));
    expect(tasks).toEqual({
      wait_file: ["skipped", "sensor timed out after 1h: condition not met", 1],
      load: ["skipped", "upstream: 1 task(s) skipped", 0],
    });
    const pokes = await h.store.listAttempts("waits@2026-09-01", "wait_file");
    expect(pokes.map((a) => a.state)).toEqual(["rescheduled", "rescheduled", "rescheduled", "rescheduled", "rescheduled", "rescheduled", "skipped"]);
  });

  it("succeed once the condition is met, and fail hard on timeout without softFail", async () => {
    const landing = join(process.env.TMPDIR ?? "/tmp", `idem-sensor-${process.pid}-${Date.now()}`);
    mkdirSync(landing, { recursive: true });
    const p = pipeline("files", { schedule: london(), start: "2026-09-01", end: "2026-09-02" }, {
      wait_file: { sensor: fileExists((ctx) => join(landing, `${ctx.businessDate}.csv`)), pokeInterval: "15m", sensorTimeout: "1h", retries: 3 },
    });
    h = await ScheduleHarness.open([p], "2026-09-01T00:00:00Z");
    await h.at("2026-09-02T01:00:00Z");
    writeFileSync(join(landing, "2026-09-01.csv"), "order_id\n");
    await h.at("2026-09-02T01:15:00Z");
    expect((await h.runs("files"))[0]!.state).toBe("success");
    await h.at("2026-09-03T01:00:00Z");
    for (let m = 15; m <= 60; m += 15) await h.at(Date.parse("2026-09-03T01:00:00Z") + m * 60_000);
    const [, second] = await h.runs("files");
    expect(second!.state).toBe("failed");
    const last = (await h.store.listAttempts(second!.runId, "wait_file")).at(-1)!;
    expect(last).toMatchObject({ errorClass: "SensorTimeout", state: "failed" });
    expect(existsSync(landing)).toBe(true);
  });
});

describe("the sensor timeout rule", () => {
  it("retries an error of the check under `retries`, but the total timeout counts from the first start and is never retried", async () => {
    let calls = 0;
    const p = pipeline("mounted", { schedule: london(), start: "2026-09-01", end: "2026-09-01" }, {
      wait_file: {
        sensor: () => {
          if (++calls === 1) throw new Error("landing share not mounted");
          return false;
        },
        pokeInterval: "15m", sensorTimeout: "1h", retries: 3, retryDelay: "10m",
      },
    });
    h = await ScheduleHarness.open([p], "2026-09-01T00:00:00Z");
    const at = (hhmm: string) => h.at(`2026-09-02T${hhmm}:00Z`);
    for (const t of ["01:00", "01:10", "01:25", "01:40", "01:55", "02:00", "02:30", "03:00"]) await at(t);
    const attempts = await h.store.listAttempts("mounted@2026-09-01", "wait_file");
    expect(attempts.map((a) => [new Date(a.startedAt).toISOString().slice(11, 16), a.tryNumber, a.state, a.errorClass])).toEqual([
      ["01:00", 1, "failed", "TaskFailed"], // the check's own error: retried after retryDelay
      ["01:10", 2, "rescheduled", null], // a poke that finds nothing uses no try
      ["01:25", 2, "rescheduled", null],
      ["01:40", 2, "rescheduled", null],
      ["01:55", 2, "rescheduled", null], // the next poke is capped at the deadline: first start + 1h
      ["02:00", 2, "failed", "SensorTimeout"], // two tries are left, and none is used
    ]);
    expect(attempts.at(-1)!.errorMessage).toBe("sensor timed out after 1h: condition not met");
    expect((await h.store.listTaskInstances("mounted@2026-09-01"))[0]).toMatchObject({ state: "failed", tryNumber: 2 });
    expect((await h.runs("mounted"))[0]!.state).toBe("failed");
  });

  it("starts the total timeout again when the task is cleared", async () => {
    const p = pipeline("cleared", { schedule: london(), start: "2026-09-01", end: "2026-09-01" }, {
      wait_file: { sensor: () => false, pokeInterval: "30m", sensorTimeout: "1h" },
    });
    h = await ScheduleHarness.open([p], "2026-09-01T00:00:00Z");
    for (const t of ["01:00", "01:30", "02:00"]) await h.at(`2026-09-02T${t}:00Z`);
    expect((await h.store.listTaskInstances("cleared@2026-09-01"))[0]).toMatchObject({ state: "failed" });
    await h.at("2026-09-02T05:00:00Z");
    await h.engine.clear("cleared@2026-09-01", { reason: "the vendor resent the file" });
    for (const t of ["05:00", "05:30"]) await h.at(`2026-09-02T${t}:00Z`);
    expect((await h.store.listTaskInstances("cleared@2026-09-01"))[0]).toMatchObject({ state: "up_for_reschedule" });
    await h.at("2026-09-02T06:00:00Z");
    const attempts = await h.store.listAttempts("cleared@2026-09-01", "wait_file");
    expect(attempts.map((a) => `${new Date(a.startedAt).toISOString().slice(11, 16)} ${a.state}`)).toEqual([
      "01:00 rescheduled", "01:30 rescheduled", "02:00 failed", "05:00 rescheduled", "05:30 rescheduled", "06:00 failed",
    ]);
  });
});

describe("data triggers", () => {
  it("start a downstream run for D once every dataset it waits on is published for D, late upstream included", async () => {
    const orders = pipeline("orders", { schedule: london("02:00"), start: "2026-09-01", end: "2026-09-02" }, { publish: { run: noop, produces: ["orders_daily"] } });
    const customers = pipeline("customers", { schedule: london("09:00"), start: "2026-09-01", end: "2026-09-02" }, { publish: { run: noop, produces: ["customers"] } });
    const seen: string[] = [];
    const report = pipeline("report", { timezone: "Europe/London", triggerOn: ["orders_daily", "customers"] }, {
      build: { run: (ctx) => void seen.push(`${ctx.businessDate} try ${ctx.tryNumber}`) },
    });
    h = await ScheduleHarness.open([orders, customers, report], "2026-09-01T00:00:00Z");
    await h.at("2026-09-02T03:00:00Z"); // orders for 09-01 published; customers not yet
    expect(await h.runs("report")).toEqual([]);
    await h.engine.runForDate("orders", "2026-09-01"); // a rerun publishes again: still one run later
    await h.at("2026-09-02T09:00:00Z"); // the late upstream arrives
    await h.at("2026-09-02T09:00:01Z");
    expect((await h.runs("report")).map((r) => [r.businessDate, r.trigger, r.triggeredBy])).toEqual([["2026-09-01", "data", "datasets: orders_daily, customers"]]);
    expect(seen).toEqual(["2026-09-01 try 1"]);
    await h.at("2026-09-03T09:00:00Z");
    expect((await h.runs("report")).map((r) => r.businessDate)).toEqual(["2026-09-01", "2026-09-02"]);
  });
});

describe("crash recovery", () => {
  it("turns an attempt whose lease expired into a lost try, retried, and refuses the dead worker's result", async () => {
    const p = pipeline("lease", { schedule: london(), start: "2026-09-01", end: "2026-09-01" }, { t: { run: noop, retries: 1, retryDelay: "1m" } });
    h = await ScheduleHarness.open([p], "2026-09-02T01:00:00Z");
    h.clock.set("2026-09-02T01:00:00Z");
    await h.scheduler.tick();
    const [claimed] = await h.store.claimReady({ workerId: "doomed", pid: 999, limit: 1, now: h.clock.now(), leaseMs: 30_000, logDir: "/nonexistent/logs" });
    h.clock.advance(31_000);
    const tick = await h.scheduler.tick();
    expect(tick.attemptsLost).toBe(1);
    const [lost] = await h.store.listAttempts(claimed!.runId, "t");
    expect(lost).toMatchObject({ state: "lost", errorClass: "LeaseExpired" });
    expect(lost!.errorMessage).toMatch(/worker doomed stopped renewing its lease/);
    const late = await h.store.finishAttempt({
      attemptId: claimed!.attemptId, workerId: "doomed", now: h.clock.now(), outcome: "success", retryable: false,
      retryAt: null, exitCode: null, errorClass: null, errorMessage: null, summary: null, skipReason: null,
    });
    expect(late.accepted).toBe(false);
    await h.at(h.clock.now() + 60_000);
    const attempts = await h.store.listAttempts(claimed!.runId, "t");
    expect(attempts.map((a) => [a.tryNumber, a.state])).toEqual([[1, "lost"], [2, "success"]]);
  });

  it("lets one scheduler lead; a standby takes over when the leader stops renewing", async () => {
    const p = pipeline("leader", { schedule: london(), start: "2026-09-01" }, { t: { run: noop } });
    h = await ScheduleHarness.open([p], "2026-09-01T00:00:00Z");
    const standby = new Scheduler({ store: h.store, clock: h.clock, pipelines: [p], holder: "scheduler-2", leaseTtlMs: 15_000 });
    h.clock.set("2026-09-03T03:00:00Z");
    expect((await h.scheduler.tick()).leader).toBe(true);
    const waiting = await standby.tick();
    expect(waiting).toMatchObject({ leader: false, leaderHolder: "scheduler-1", runsCreated: 0 });
    h.clock.advance(15_001);
    const takeover = await standby.tick();
    expect(takeover.leader).toBe(true);
    expect((await h.store.getLead("scheduler"))!.term).toBe(2);
    expect((await h.scheduler.tick()).leader).toBe(false);
    expect((await h.runs("leader")).map((r) => r.businessDate)).toEqual(["2026-09-01", "2026-09-02"]);
  });

  it("keeps the lead through a tick longer than its lease: the leader renews while it works", async () => {
    const p = pipeline("slow_tick", { schedule: london(), start: "2026-09-01" }, { t: { run: noop } });
    h = await ScheduleHarness.open([p], "2026-09-01T00:00:00Z");
    // The leader's store stalls inside the tick (a slow query, a busy machine) until released.
    let release!: () => void;
    const stall = new Promise<void>((r) => (release = r));
    let stalled = false;
    let renewals = 0;
    const store = h.store;
    const slowStore = new Proxy(store, {
      get(target, key) {
        const value = Reflect.get(target, key);
        if (key === "countLiveRuns") return async (...args: unknown[]) => ((stalled = true), await stall, value.apply(target, args));
        // Counted once written: the standby must not look before the renewal has landed.
        if (key === "tryLead") return async (...args: unknown[]) => { const lead = await value.apply(target, args); renewals++; return lead; };
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const ttl = 300;
    const told: string[] = [];
    const onLeadChange = (who: string) => (leader: boolean, holder: string) => told.push(`${who}: ${leader ? "leads" : `stands by for ${holder}`}`);
    const leader = new Scheduler({ store: slowStore, clock: h.clock, pipelines: [p], holder: "leader", leaseTtlMs: ttl, onLeadChange: onLeadChange("leader") });
    const standby = new Scheduler({ store, clock: h.clock, pipelines: [p], holder: "standby", leaseTtlMs: ttl, onLeadChange: onLeadChange("standby") });
    h.clock.set("2026-09-03T03:00:00Z");
    const ticking = leader.tick();
    const until = async (what: string, check: () => boolean) => {
      for (const deadline = Date.now() + 10_000; !check(); await new Promise((r) => setTimeout(r, 5))) {
        if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
      }
    };
    await until("the tick to stall", () => stalled);
    expect(told).toEqual(["leader: leads"]); // at once, not when the tick ends
    // Five leases' worth of clock pass during the one tick; each step follows a renewal.
    for (let step = 0; step < 5; step++) {
      const seen = renewals;
      await until("the leader to renew its lease during the tick", () => renewals > seen);
      h.clock.advance((ttl * 2) / 3);
      expect(await standby.tick()).toMatchObject({ leader: false, leaderHolder: "leader" });
    }
    release();
    expect(await ticking).toMatchObject({ leader: true, runsCreated: 2 });
    expect((await store.getLead("scheduler"))!).toMatchObject({ holder: "leader", term: 1 });
    expect(told).toEqual(["leader: leads", "standby: stands by for leader"]);
  });
});
