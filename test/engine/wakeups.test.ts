import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { systemClock } from "../../src/core/model/clock.ts";
import { pipeline } from "../../src/core/pipeline/define.ts";
import { daily } from "../../src/core/time/index.ts";
import { saveVersion, taskInstancesOf } from "../../src/engine/records/pipeline-records.ts";
import { Engine } from "../../src/engine/engine.ts";
import { Scheduler } from "../../src/engine/scheduler/scheduler.ts";
import { schedulerWakeupFile, subscribeToScheduling, wakeupFile } from "../../src/engine/worker/wakeup.ts";
import { Worker } from "../../src/engine/worker/worker.ts";
import type { Store } from "../../src/store/port.ts";
import { openTestStore } from "../support/test-store.ts";
import { countingCalls } from "../support/counting-store.ts";

/**
 * The scheduler wakes for what it acts on (a run's end, a manual action), not for every task's
 * finish; the worker touches the SQLite wake-up files only where the store has no channel.
 * Real clock, real store (SQLite, and PostgreSQL in the engine-on-postgres project), an
 * in-process worker; the scheduler's own timer is set far beyond the test so that every tick
 * it makes is one it was woken for.
 */

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const DAY = 86_400_000;
const WIDE = 150;

async function until(what: string, check: () => Promise<boolean>, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what} after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A store of its own, for a scheduler with no worker beside it. */
async function storeAlone() {
  const dir = mkdtempSync(join(tmpdir(), "idem-wakeups-"));
  const opened = await openTestStore(dir);
  cleanup.push(async () => {
    await opened.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return opened;
}

async function setUp() {
  const dir = mkdtempSync(join(tmpdir(), "idem-wakeups-"));
  const stateDir = join(dir, ".idem");
  const opened = await openTestStore(dir);
  cleanup.push(async () => {
    await opened.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const today = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate());
  const start = new Date(today - 3 * DAY).toISOString().slice(0, 10);
  // Three days due at once, one run at a time: each next run can only be created once the one
  // before has ended, so only a wake-up on the run's end lets it start before the next timer tick.
  const daysInTurn = pipeline("days", { schedule: daily({ at: "00:00", timezone: "UTC" }), start, maxActiveRuns: 1 }, { load: { run: () => {} } });
  const tasks: Record<string, { run: () => Promise<void> }> = {};
  // Each task takes a moment, so the finishes are spread over a second rather than landing together.
  for (let i = 0; i < WIDE; i++) tasks[`t${i}`] = { run: () => new Promise<void>((r) => setTimeout(r, 20)) };
  const wide = pipeline("wide", { maxActiveTasks: 1000 }, tasks);
  const resumed = pipeline("resumed", { schedule: daily({ at: "00:00", timezone: "UTC" }), start, maxActiveRuns: 5 }, { load: { run: () => {} } });
  const pipelines = [daysInTurn, wide, resumed];
  await opened.store.setPaused({ pipelineId: "resumed", paused: true, note: "until the test resumes it", actor: "test", at: Date.now() });
  const engine = new Engine({ store: opened.store, clock: systemClock, stateDir, pipelines, projectDir: dir });
  // Each tick of a leader reaps expired leases once: its ticks are its calls of listExpiredAttempts.
  const counted = countingCalls(opened.store, "listExpiredAttempts");
  const stop = new AbortController();
  const scheduler = new Scheduler({ store: counted.store, clock: systemClock, pipelines, holder: "scheduler-under-test", tickMs: 600_000, leaseTtlMs: 1_800_000 });
  const worker = new Worker({ store: opened.store, clock: systemClock, pipelines, stateDir, workerId: "worker-under-test", concurrency: 5, pollMs: 50 });
  const running = [
    scheduler.run(stop.signal, { subscribe: (wake) => subscribeToScheduling(opened.store, stateDir, wake) }),
    worker.run(stop.signal),
  ];
  cleanup.push(async () => {
    stop.abort();
    await Promise.all(running);
  });
  return { store: opened.store, engine, stateDir, wide, ticks: counted.calls };
}

describe("what wakes the scheduler", () => {
  it("a run's end wakes it, a task's finish does not", async () => {
    const { store, wide, ticks } = await setUp();
    await until("the three days to run one after another", async () =>
      (await store.listRuns({ pipelineId: "days" })).filter((r) => r.state === "success").length === 3);
    const before = ticks();
    const now = Date.now();
    await saveVersion(store, wide, now, "test");
    await store.createRunIfAbsent({
      runId: "wide@1", pipelineId: "wide", intervalStart: 0, intervalEnd: 1, businessDate: "1970-01-01", graphVersion: wide.version,
      trigger: "manual", triggeredBy: "test", reason: null, params: {}, tasks: taskInstancesOf(wide), createdAt: now,
    });
    await until(`the ${WIDE}-task run to succeed`, async () => (await store.getRun("wide@1"))?.state === "success");
    await new Promise((r) => setTimeout(r, 300)); // wake-ups still on their way are counted too
    // Woken for the wide run's end (a file watch may report one touch twice), not 150 times.
    expect(ticks() - before).toBeGreaterThanOrEqual(1);
    expect(ticks() - before).toBeLessThanOrEqual(4);
    // The first tick, then one or two per run's end.
    expect(before).toBeLessThanOrEqual(8);
  });
  it("a manual action wakes it: runs of a resumed pipeline start at once", async () => {
    const { store, engine } = await setUp();
    await until("the three days", async () => (await store.listRuns({ pipelineId: "days" })).filter((r) => r.state === "success").length === 3);
    expect(await store.listRuns({ pipelineId: "resumed" })).toEqual([]);
    await engine.unpause("resumed", { actor: "test", note: "resumed" });
    await until("the resumed pipeline's three days", async () => (await store.listRuns({ pipelineId: "resumed" })).length === 3, 10_000);
  });

  it("stops when told to during a tick, without sleeping until the next one", async () => {
    const opened = await storeAlone();
    const stop = new AbortController();
    let ticking!: () => void;
    const inTick = new Promise<void>((r) => (ticking = r));
    const slowStore = new Proxy(opened.store, {
      get(target, key) {
        const value = Reflect.get(target, key, target);
        if (typeof value !== "function") return value;
        if (key === "listExpiredAttempts") return async (...args: unknown[]) => (ticking(), await new Promise((r) => setTimeout(r, 200)), value.apply(target, args));
        return value.bind(target);
      },
    });
    const scheduler = new Scheduler({ store: slowStore, clock: systemClock, pipelines: [], holder: "stopping", tickMs: 600_000, leaseTtlMs: 1_800_000 });
    const running = scheduler.run(stop.signal);
    await inTick;
    stop.abort();
    const stopped = await Promise.race([running.then(() => "stopped"), new Promise((r) => setTimeout(() => r("still sleeping after 5 s"), 5_000))]);
    expect(stopped).toBe("stopped");
  });
});

describe("a wake-up during a tick", () => {
  it("is acted on right after the tick, not at the next timer tick", async () => {
    const opened = await storeAlone();
    const stop = new AbortController();
    let ticks = 0;
    let wake!: () => void;
    const slowStore = new Proxy(opened.store, {
      get(target, key) {
        const value = Reflect.get(target, key, target);
        if (typeof value !== "function") return value;
        if (key === "listExpiredAttempts") {
          return async (...args: unknown[]) => {
            if (++ticks === 1) wake(); // a run ended elsewhere while this tick was under way
            await new Promise((r) => setTimeout(r, 100));
            return value.apply(target, args);
          };
        }
        return value.bind(target);
      },
    });
    const scheduler = new Scheduler({ store: slowStore, clock: systemClock, pipelines: [], holder: "woken", tickMs: 600_000, leaseTtlMs: 1_800_000 });
    const running = scheduler.run(stop.signal, { subscribe: async (w) => ((wake = w), () => {}) });
    cleanup.push(async () => {
      stop.abort();
      await running;
    });
    await until("a second tick", async () => ticks >= 2, 5_000);
    await new Promise((r) => setTimeout(r, 300));
    expect(ticks).toBe(2); // and no more: nothing woke it again
  });
});

describe("the worker's wake-up files", () => {
  it("are touched on SQLite after a finish, never on a store with its own channels", async () => {
    const { store, stateDir, wide } = await setUp();
    await until("the three days", async () => (await store.listRuns({ pipelineId: "days" })).filter((r) => r.state === "success").length === 3);
    const mtime = (file: string) => (existsSync(file) ? statSync(file).mtimeMs : 0);
    const workBefore = mtime(wakeupFile(stateDir));
    const schedulerBefore = mtime(schedulerWakeupFile(stateDir));
    await new Promise((r) => setTimeout(r, 50)); // past the file system's time resolution
    const now = Date.now();
    await saveVersion(store, wide, now, "test");
    await store.createRunIfAbsent({
      runId: "wide@2", pipelineId: "wide", intervalStart: 0, intervalEnd: 1, businessDate: "1970-01-01", graphVersion: wide.version,
      trigger: "manual", triggeredBy: "test", reason: null, params: {}, tasks: taskInstancesOf(wide), createdAt: now,
    });
    await until("the wide run", async () => (await store.getRun("wide@2"))?.state === "success");
    // The finishes that ended the run touch the scheduler's file once their turn of the event
    // loop is over (one touch for all of them): queued already, it runs before this does.
    await new Promise((r) => setImmediate(r));
    const hasChannels = store.watchWork !== undefined;
    expect(mtime(wakeupFile(stateDir)) > workBefore).toBe(!hasChannels);
    expect(mtime(schedulerWakeupFile(stateDir)) > schedulerBefore).toBe(!hasChannels);
  });
});
