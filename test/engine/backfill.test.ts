import { afterEach, describe, expect, it } from "vitest";
import { pipeline } from "../../src/core/pipeline/define.ts";
import { daily } from "../../src/core/time/index.ts";
import { ScheduleHarness } from "../support/scheduling.ts";

let h: ScheduleHarness;
afterEach(async () => h?.close());

const failing = new Set<string>();
let inPool = 0;
let mostInPool = 0;

function salesPipeline(frozenWeek = true) {
  return pipeline(
    "sales",
    {
      schedule: daily({ at: "02:00", timezone: "Europe/London" }),
      start: "2026-09-01",
      frozen: frozenWeek ? [{ from: "2026-09-08", to: "2026-09-14", owner: "finance", reason: "week closed by finance" }] : [],
    },
    {
      load: {
        pool: "warehouse",
        run: async (ctx) => {
          inPool++;
          mostInPool = Math.max(mostInPool, inPool);
          await new Promise((r) => setTimeout(r, 1));
          inPool--;
          if (failing.has(ctx.businessDate)) throw new Error(`bad file for ${ctx.businessDate}`);
          return { trigger: ctx.trigger };
        },
      },
      report: { after: ["load"], run: () => {} },
    },
  );
}

async function openSales(at = "2026-10-05T03:00:00Z") {
  failing.clear();
  inPool = 0;
  mostInPool = 0;
  h = await ScheduleHarness.open([salesPipeline()], at);
  await h.engine.setPool("warehouse", 1);
  await h.engine.pause("sales", { note: "only the backfill runs in this test" });
}

/** Ticks until the backfill ends, sampling its live runs. */
async function drive(backfillId: string): Promise<number> {
  let most = 0;
  for (let i = 0; i < 1_000; i++) {
    await h.scheduler.tick();
    most = Math.max(most, await h.store.countLiveBackfillRuns(backfillId));
    await h.work(8);
    const status = await h.engine.backfillStatus(backfillId);
    if (status.state !== "running") return most;
  }
  throw new Error("backfill did not end");
}

describe("backfills", () => {
  it("plan every interval with an action and a reason, refusing the frozen week", async () => {
    await openSales();
    const plan = await h.engine.planBackfill("sales", { from: "2026-08-30", to: "2026-10-06", maxActiveRuns: 2 });
    const byDate = Object.fromEntries(plan.items.map((i) => [i.businessDate, `${i.action}: ${i.why}`]));
    expect(byDate["2026-08-31"]).toBe("refuse: before the pipeline's start");
    expect(byDate["2026-09-01"]).toBe("create: missing");
    expect(byDate["2026-09-10"]).toBe("refuse: frozen 2026-09-08..2026-09-14 by finance: week closed by finance");
    expect(byDate["2026-10-05"]).toBe("refuse: in the future: its interval ends at 2026-10-06 00:00 Europe/London");
    expect(plan.estimate).toMatchObject({ p50Ms: null, basis: "no history" });
  });

  it("run 30 days under their own cap, with a pool of one, and rerun only the failed days afterwards", async () => {
    await openSales();
    failing.add("2026-09-03").add("2026-09-21");
    const { backfill, created } = await h.engine.backfill("sales", { from: "2026-09-01", to: "2026-09-30", maxActiveRuns: 2, reason: "initial load", actor: "ana" });
    expect(created).toBe(true);
    const most = await drive(backfill.backfillId);
    expect(most).toBe(2);
    expect(mostInPool).toBe(1);
    const status = await h.engine.backfillStatus(backfill.backfillId);
    expect(status).toMatchObject({ state: "failed", progress: { planned: 23, succeeded: 21, failed: 2, untouched: 7 } });
    const runs = await h.runs("sales");
    expect(runs).toHaveLength(23);
    expect(runs.every((r) => r.trigger === "backfill" && r.backfillId === backfill.backfillId && r.triggeredBy === "ana" && r.reason === "initial load")).toBe(true);
    const frozenRuns = runs.filter((r) => r.businessDate >= "2026-09-08" && r.businessDate <= "2026-09-14");
    expect(frozenRuns).toEqual([]);
    const [attempt] = await h.store.listAttempts("sales@2026-09-01", "load");
    expect(attempt!.summary).toEqual({ trigger: "backfill" });

    failing.clear();
    const again = await h.engine.backfill("sales", { from: "2026-09-01", to: "2026-09-30", reprocess: "failed", maxActiveRuns: 2, reason: "files fixed", actor: "ana" });
    const plan = again.plan.items.filter((i) => i.action === "rerun").map((i) => i.businessDate);
    expect(plan).toEqual(["2026-09-03", "2026-09-21"]);
    await drive(again.backfill.backfillId);
    expect((await h.engine.backfillStatus(again.backfill.backfillId)).state).toBe("completed");
    const attempts = await h.store.listAttempts("sales@2026-09-03", "load");
    expect(attempts.map((a) => [a.tryNumber, a.state])).toEqual([[1, "failed"], [2, "success"]]);
    expect((await h.runs("sales")).every((r) => r.state === "success")).toBe(true);
  });

  it("issued twice while live, is one backfill: no work is duplicated", async () => {
    await openSales();
    const first = await h.engine.backfill("sales", { from: "2026-09-01", to: "2026-09-05", reason: "one" });
    const second = await h.engine.backfill("sales", { from: "2026-09-01", to: "2026-09-05", reason: "one again" });
    expect(second.created).toBe(false);
    expect(second.backfill.backfillId).toBe(first.backfill.backfillId);
    await drive(first.backfill.backfillId);
    expect(await h.runs("sales")).toHaveLength(5);
  });

  it("pause stops new runs, resume continues, cancel starts nothing new and ends what waits", async () => {
    await openSales();
    const { backfill } = await h.engine.backfill("sales", { from: "2026-09-15", to: "2026-09-30", maxActiveRuns: 2, reason: "pause test" });
    await h.scheduler.tick(); // two runs start
    await h.engine.controlBackfill(backfill.backfillId, "pause", { actor: "ops", reason: "warehouse maintenance" });
    await h.work(8);
    for (let i = 0; i < 3; i++) await h.scheduler.tick();
    expect(await h.runs("sales")).toHaveLength(2);
    await h.engine.controlBackfill(backfill.backfillId, "resume", { actor: "ops" });
    await h.scheduler.tick();
    expect(await h.runs("sales")).toHaveLength(4);
    const ended: string[] = [];
    const stopListening = h.engine.events.on("run:ended", (e) => ended.push(`${e.runId} ${e.state} ${e.by}`));
    await h.engine.controlBackfill(backfill.backfillId, "cancel", { actor: "ops", reason: "wrong range" });
    stopListening();
    await h.work(8);
    for (let i = 0; i < 3; i++) await h.scheduler.tick();
    const runs = await h.runs("sales");
    expect(runs).toHaveLength(4);
    expect(runs.slice(2).map((r) => r.state)).toEqual(["failed", "failed"]);
    // Ended by the cancel itself, with no attempt: told once each (the traces write their run spans from it).
    expect(ended.sort()).toEqual(runs.slice(2).map((r) => `${r.runId} failed operator`).sort());
    const tasks = await h.store.listTaskInstances(runs[2]!.runId);
    expect(tasks.map((t) => [t.state, t.reason])).toEqual([
      ["skipped", `backfill ${backfill.backfillId} cancelled by ops: wrong range`],
      ["skipped", `backfill ${backfill.backfillId} cancelled by ops: wrong range`],
    ]);
    expect((await h.engine.backfillStatus(backfill.backfillId)).state).toBe("cancelled");
    const audit = await h.engine.audit({ pipelineId: "sales" });
    expect(audit.slice(0, 4).map((a) => `${a.actor} ${a.action}`)).toEqual(["ops backfill-cancel", "ops backfill-resume", "ops backfill-pause", expect.stringMatching(/ backfill$/)]);
  });

  it("gives a live scheduled run its pool slot before the backfill's runs", async () => {
    await openSales("2026-10-02T03:00:00Z");
    const { backfill } = await h.engine.backfill("sales", { from: "2026-09-15", to: "2026-09-25", maxActiveRuns: 4, reason: "rebuild" });
    await h.scheduler.tick(); // four backfill runs queued
    await h.engine.unpause("sales");
    h.clock.set("2026-10-02T03:00:00Z");
    await h.store.skipIntervals({ pipelineId: "sales", intervals: [], reason: "", at: h.clock.now(), cursor: Date.parse("2026-09-30T23:00:00Z") });
    await h.scheduler.tick(); // the live run for 2026-10-01 arrives
    const [first] = await h.store.claimReady({ workerId: "w", pid: 1, limit: 1, now: h.clock.now(), leaseMs: 60_000, logDir: "/nonexistent/logs", limits: {} });
    expect(first).toMatchObject({ runId: "sales@2026-10-01", trigger: "schedule" });
    expect(backfill.state).toBe("running");
  });
});

describe("operator actions", () => {
  it("clear a failed task and what is downstream of it, keeping history; skip and mark leave a record", async () => {
    await openSales();
    failing.add("2026-09-02");
    await h.engine.unpause("sales");
    await h.engine.runForDate("sales", "2026-09-02", { actor: "ana" });
    expect((await h.store.getRun("sales@2026-09-02"))!.state).toBe("failed");
    failing.clear();
    const cleared = await h.engine.clear("sales@2026-09-02", { taskId: "load", downstream: true, reason: "file replaced", actor: "bo" });
    expect(cleared.map((t) => [t.taskId, t.state])).toEqual([["load", "queued"], ["report", "scheduled"]]);
    await h.work();
    expect((await h.store.getRun("sales@2026-09-02"))!.state).toBe("success");
    expect((await h.store.listAttempts("sales@2026-09-02", "load")).map((a) => a.tryNumber)).toEqual([1, 2]);

    failing.add("2026-09-03");
    await h.engine.runForDate("sales", "2026-09-03", { actor: "dee" });
    await h.engine.skip("sales@2026-09-03", "load", { reason: "no sales that day", actor: "cy" });
    expect((await h.store.getRun("sales@2026-09-03"))!.state).toBe("success");
    const skipped = await h.store.listTaskInstances("sales@2026-09-03");
    expect(Object.fromEntries(skipped.map((t) => [t.taskId, [t.state, t.reason]]))).toEqual({
      load: ["skipped", "skipped by cy: no sales that day"],
      report: ["skipped", "upstream: 1 task(s) skipped"],
    });
    await h.engine.mark("sales@2026-09-03", "load", { state: "success", reason: "loaded by hand", actor: "cy" });
    await h.work();
    const marked = await h.store.listTaskInstances("sales@2026-09-03");
    expect(Object.fromEntries(marked.map((t) => [t.taskId, t.state]))).toEqual({ load: "success", report: "success" });
    const audit = await h.engine.audit({ pipelineId: "sales" });
    expect(audit.slice(0, 4).map((a) => [a.actor, a.action, a.reason, a.graphVersion])).toEqual([
      ["cy", "mark-success", "loaded by hand", h.pipelines[0]!.version],
      ["cy", "skip", "no sales that day", h.pipelines[0]!.version],
      ["dee", "trigger", null, h.pipelines[0]!.version],
      ["bo", "clear", "file replaced", h.pipelines[0]!.version],
    ]);
  });

  it("refuse a frozen date for a manual run unless it is opened with a reason", async () => {
    await openSales();
    await expect(h.engine.runForDate("sales", "2026-09-10")).rejects.toThrow(
      'pipeline sales: 2026-09-10 is frozen 2026-09-08..2026-09-14 by finance: week closed by finance; give openFrozen to run it anyway',
    );
    await expect(h.engine.trigger("sales", "2026-09-10")).rejects.toThrow(/frozen/);
    const opened = await h.engine.runForDate("sales", "2026-09-10", { openFrozen: "restatement approved by finance", actor: "cfo" });
    expect(opened.run.state).toBe("success");
    const [entry] = await h.engine.audit({ pipelineId: "sales" });
    expect(entry!.details).toMatchObject({ openFrozen: "restatement approved by finance" });
  });
});
