import { eventsLoggedTo } from "../support/events.ts";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { systemClock } from "../../src/core/model/clock.ts";
import { pipeline } from "../../src/core/pipeline/define.ts";
import type { Pipeline } from "../../src/core/pipeline/types.ts";
import { saveVersion } from "../../src/engine/records/pipeline-records.ts";
import { Worker, type WorkerOptions } from "../../src/engine/worker/worker.ts";
import type { Store } from "../../src/store/port.ts";
import { newRun, tasksOf } from "../support/shapes.ts";
import { openTestStore } from "../support/test-store.ts";
import { countingClaims } from "../support/counting-store.ts";

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

async function project(p: Pipeline, overrides: Parameters<typeof tasksOf>[2] = {}) {
  const dir = mkdtempSync(join(tmpdir(), "idem-prefetch-"));
  const opened = await openTestStore(dir);
  cleanup.push(async () => {
    await opened.close();
    rmSync(dir, { recursive: true, force: true });
  });
  await saveVersion(opened.store, p, Date.now(), "test");
  await opened.store.createRunIfAbsent(newRun({ graphVersion: p.version, tasks: tasksOf([...p.tasks.keys()], [], overrides), createdAt: Date.now() }));
  return { dir, store: opened.store };
}

function startWorker(store: Store, dir: string, p: Pipeline, options: Partial<WorkerOptions>) {
  const logs: string[] = [];
  const worker = new Worker({ store, clock: systemClock, pipelines: [p], stateDir: dir, workerId: "w1", concurrency: 1, pollMs: 20, events: eventsLoggedTo(logs), ...options });
  const stop = new AbortController();
  const running = worker.run(stop.signal);
  return { logs, stop: async () => (stop.abort(), await running), running };
}

async function until<T>(what: string, check: () => Promise<T | undefined | false>, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A gate task code waits on; `open()` lets every waiter through. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return { open, opened };
}

describe("a worker that claims ahead of its free slots (prefetch)", () => {
  it("claims up to concurrency + prefetch at once, runs only concurrency, and records each attempt's real start", async () => {
    const release = gate();
    let runningNow = 0;
    let most = 0;
    const task = () => ({
      run: async () => {
        most = Math.max(most, ++runningNow);
        await release.opened;
        await new Promise((r) => setTimeout(r, 30));
        runningNow--;
      },
    });
    const p = pipeline("p", { maxActiveTasks: 100 }, { a: task(), b: task(), c: task(), d: task(), e: task() });
    const { dir, store } = await project(p);
    const worker = startWorker(store, dir, p, { concurrency: 2, prefetch: 2 });
    const held = await until("four attempts claimed", async () => {
      const states = (await store.listTaskInstances("p@2026-09-01")).map((t) => t.state);
      return states.filter((s) => s === "running").length === 4 && states;
    });
    expect(held.filter((s) => s === "queued")).toHaveLength(1);
    expect(runningNow).toBe(2);
    release.open();
    await until("the run to end", async () => (await store.getRun("p@2026-09-01"))!.state === "success");
    await worker.stop();
    expect(most).toBe(2);
    const attempts = (await store.listAttempts("p@2026-09-01")).sort((x, y) => x.startedAt - y.startedAt);
    expect(attempts.map((a) => [a.state, a.tryNumber])).toEqual(Array(5).fill(["success", 1]));
    // The two claimed ahead started when a slot freed, after the first two ended, and say so.
    const firstEnd = Math.min(...attempts.slice(0, 2).map((a) => a.endedAt!));
    for (const queued of attempts.slice(2, 4)) expect(queued.startedAt).toBeGreaterThanOrEqual(firstEnd);
  });

  it("hands the queue back on shutdown at once, on the same try, and another worker runs it", async () => {
    const release = gate();
    const ran: string[] = [];
    const task = (id: string) => ({ run: async () => { ran.push(id); await release.opened; } });
    const p = pipeline("p", { maxActiveTasks: 100 }, { a: task("a"), b: task("b"), c: task("c") });
    const { dir, store } = await project(p);
    const first = startWorker(store, dir, p, { concurrency: 1, prefetch: 2, graceMs: 5_000 });
    await until("all three claimed", async () => (await store.listTaskInstances("p@2026-09-01")).every((t) => t.state === "running"));
    const stopping = first.stop();
    await until("the queue handed back", async () => (await store.listTaskInstances("p@2026-09-01")).filter((t) => t.state === "up_for_reschedule").length === 2);
    release.open(); // the running one ends within its grace
    await stopping;
    expect(first.logs).toContain("handing back 2 claimed attempt(s) that had not started");
    expect(ran).toHaveLength(1);
    const handedBack = (await store.listAttempts("p@2026-09-01")).filter((a) => a.taskId !== ran[0]);
    expect(handedBack.map((a) => [a.state, a.tryNumber, a.errorClass])).toEqual([["rescheduled", 1, "Cancelled"], ["rescheduled", 1, "Cancelled"]]);
    const second = startWorker(store, dir, p, { workerId: "w2", concurrency: 2 });
    await until("the run to end", async () => (await store.getRun("p@2026-09-01"))!.state === "success");
    await second.stop();
    const tasks = await store.listTaskInstances("p@2026-09-01");
    expect(tasks.map((t) => [t.state, t.tryNumber])).toEqual([["success", 1], ["success", 1], ["success", 1]]);
  });

  it("renews the leases of queued attempts with the running ones' (one call per heartbeat)", async () => {
    const release = gate();
    const p = pipeline("p", { maxActiveTasks: 100 }, { a: { run: () => release.opened }, b: { run: () => {} }, c: { run: () => {} } });
    const { dir, store } = await project(p);
    const calls: number[][] = [];
    const counting = new Proxy(store, {
      get(target, property) {
        const value = Reflect.get(target, property) as unknown;
        if (property === "renewLeases") {
          return (workerId: string, ids: readonly number[], until: number) => (calls.push([...ids]), target.renewLeases(workerId, ids, until));
        }
        return typeof value === "function" ? value.bind(target) : value;
      },
    }) as Store;
    const leaseMs = 900;
    const worker = startWorker(counting, dir, p, { concurrency: 1, prefetch: 2, leaseMs });
    const claimed = await until("all three claimed", async () => {
      const attempts = await store.listAttempts("p@2026-09-01");
      return attempts.length === 3 && attempts;
    });
    // Past two leases: the queued ones are still held, their leases later than at the claim.
    await new Promise((r) => setTimeout(r, 2 * leaseMs));
    const now = await store.listAttempts("p@2026-09-01");
    for (const a of now) {
      expect(a.state).toBe("running");
      expect(a.leaseExpiresAt!).toBeGreaterThan(claimed.find((c) => c.attemptId === a.attemptId)!.leaseExpiresAt! + leaseMs / 2);
    }
    expect(calls.filter((ids) => ids.length === 3).length).toBeGreaterThanOrEqual(2);
    release.open();
    await until("the run to end", async () => (await store.getRun("p@2026-09-01"))!.state === "success");
    await worker.stop();
    expect((await store.listAttempts("p@2026-09-01")).map((a) => a.state)).toEqual(["success", "success", "success"]);
  });

  it("never holds more of a pool than its slots, however far ahead it may claim", async () => {
    const release = gate();
    let inPool = 0;
    let most = 0;
    const task = () => ({ run: async () => { most = Math.max(most, ++inPool); await release.opened; inPool--; } });
    const p = pipeline("p", { maxActiveTasks: 100 }, { a: task(), b: task(), c: task(), d: task(), e: task() });
    const inDb = { pool: "db", slots: 1 };
    const { dir, store } = await project(p, { a: inDb, b: inDb, c: inDb, d: inDb, e: inDb });
    await store.setPool({ name: "db", slots: 2, at: Date.now() });
    const worker = startWorker(store, dir, p, { concurrency: 4, prefetch: 8 });
    await until("two claimed", async () => (await store.listTaskInstances("p@2026-09-01")).filter((t) => t.state === "running").length === 2);
    await new Promise((r) => setTimeout(r, 200)); // time for a claim ahead, were one allowed
    expect((await store.listTaskInstances("p@2026-09-01")).filter((t) => t.state === "running")).toHaveLength(2);
    release.open();
    await until("the run to end", async () => (await store.getRun("p@2026-09-01"))!.state === "success");
    await worker.stop();
    expect(most).toBeLessThanOrEqual(2);
  });
});

describe('a worker on prefetch "auto" (the default of idem.config.ts)', () => {
  it("claims only for its free slots until tasks have run, then twice its concurrency ahead while they are short", async () => {
    const tasks = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`t${i}`, { run: () => {} }]));
    const p = pipeline("p", { maxActiveTasks: 100 }, tasks);
    const { dir, store } = await project(p);
    const claims = countingClaims(store);
    const worker = startWorker(claims.store, dir, p, { concurrency: 2, prefetch: "auto" });
    await until("the run to end", async () => (await store.getRun("p@2026-09-01"))!.state === "success");
    await worker.stop();
    expect(claims.limits[0]).toBe(2);
    expect(Math.max(...claims.limits)).toBeGreaterThan(2);
    expect(Math.max(...claims.limits)).toBeLessThanOrEqual(2 + 4);
  });

  it("claims no further than its free slots while its tasks run for a second or more", async () => {
    const task = () => ({ run: async () => void (await new Promise((r) => setTimeout(r, 1_050))) });
    const p = pipeline("p", { maxActiveTasks: 100 }, { a: task(), b: task(), c: task() });
    const { dir, store } = await project(p);
    const claims = countingClaims(store);
    const worker = startWorker(claims.store, dir, p, { concurrency: 1, prefetch: "auto" });
    await until("the run to end", async () => (await store.getRun("p@2026-09-01"))!.state === "success");
    await worker.stop();
    expect(claims.limits.length).toBeGreaterThanOrEqual(3);
    expect(claims.limits.every((limit) => limit === 1)).toBe(true);
  });
});
