import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { systemClock } from "../../src/core/model/clock.ts";
import { pipeline } from "../../src/core/pipeline/define.ts";
import type { Pipeline } from "../../src/core/pipeline/types.ts";
import { saveVersion, taskInstancesOf } from "../../src/engine/records/pipeline-records.ts";
import { wakeupFile } from "../../src/engine/worker/wakeup.ts";
import { othersMayFindWork } from "../../src/core/policy/wake-others.ts";
import { Worker, type WorkerOptions } from "../../src/engine/worker/worker.ts";
import type { Store } from "../../src/store/port.ts";
import { openTestStore } from "../support/test-store.ts";
import { countingClaims } from "../support/counting-store.ts";

/**
 * The hop from a task's end to its child's start: the worker that recorded the finish claims the
 * child itself, waking no other process for it, and does not claim again at once after a claim
 * that took everything there was. Counts and file times, not durations: the hop's speed is
 * measured by bench/peers.ts (shape chain).
 */

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

const CHAIN = 20;

async function project(pipelines: Pipeline[]) {
  const dir = mkdtempSync(join(tmpdir(), "idem-worker-wakeups-"));
  const stateDir = join(dir, ".idem");
  const opened = await openTestStore(dir);
  cleanup.push(async () => {
    await opened.close();
    rmSync(dir, { recursive: true, force: true });
  });
  for (const p of pipelines) await saveVersion(opened.store, p, Date.now(), "test");
  return { dir, stateDir, store: opened.store };
}

async function startRun(store: Store, p: Pipeline, day: number): Promise<string> {
  const runId = `${p.id}@${day}`;
  await store.createRunIfAbsent({
    runId, pipelineId: p.id, intervalStart: day, intervalEnd: day + 1, businessDate: "1970-01-01", graphVersion: p.version,
    trigger: "manual", triggeredBy: "test", reason: null, params: {}, tasks: taskInstancesOf(p), createdAt: Date.now(),
  });
  return runId;
}

function startWorker(options: Pick<WorkerOptions, "store" | "pipelines" | "stateDir"> & Partial<WorkerOptions>) {
  // pollMs far beyond the test: every claim after the first few polls is one the worker was woken for.
  const worker = new Worker({ clock: systemClock, workerId: "w1", concurrency: 2, pollMs: 600_000, ...options });
  const stop = new AbortController();
  const running = worker.run(stop.signal);
  cleanup.push(async () => {
    stop.abort();
    await running;
  });
  return { stop: async () => (stop.abort(), await running) };
}

async function until(what: string, check: () => Promise<boolean>, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what} after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

function chainOf(length: number): Pipeline {
  const tasks: Record<string, { after: string[]; run: () => void }> = {};
  for (let i = 0; i < length; i++) tasks[`t${i}`] = { after: i ? [`t${i - 1}`] : [], run: () => {} };
  return pipeline("chain", {}, tasks);
}

const mtime = (file: string) => (existsSync(file) ? statSync(file).mtimeMs : 0);
const pastTimeResolution = () => new Promise((r) => setTimeout(r, 50));

describe("the worker that recorded a finish claims what it made eligible", () => {
  it("a chain on one worker: one claim per task, each right after its parent's finish, and no other process woken", async () => {
    const chain = chainOf(CHAIN);
    const { stateDir, store } = await project([chain]);
    const counted = countingClaims(store);
    startWorker({ store: counted.store, pipelines: [chain], stateDir });
    await until("the worker's first polls", async () => counted.limits.length >= 3);
    await pastTimeResolution();
    const fileBefore = mtime(wakeupFile(stateDir));
    const claimsBefore = counted.limits.length;
    const transactionsBefore = counted.transactions();
    const runId = await startRun(store, chain, 1);
    await until(`the ${CHAIN}-task chain`, async () => (await store.getRun(runId))?.state === "success");
    // One claim finds t0 (an idle poll: pollMs doubles from 1 ms, so the run is found quickly),
    // then one per child, made with the finish of its parent. Before, each child cost two: the one
    // that took it, and another at once that found nothing. (PostgreSQL: the run's NOTIFY may
    // wake it for one more; the finishes send none, as their claim took what they made eligible.)
    const claims = counted.limits.length - claimsBefore;
    expect(claims).toBeGreaterThanOrEqual(CHAIN);
    expect(claims).toBeLessThanOrEqual(CHAIN + 5);
    // Each finish and the claim after it are one transaction (finishAndClaim): one per task, plus
    // the polls that found t0. Apart, they were two per task.
    expect(counted.transactions() - transactionsBefore).toBeLessThanOrEqual(CHAIN + 5);
    // Every child was taken by the worker that finished its parent: no wake-up for anyone else.
    expect(mtime(wakeupFile(stateDir))).toBe(fileBefore);
  });

  it("wakes the other workers when its claim took all it asked for: more may be there", async () => {
    const fanOut = pipeline("fan", {}, {
      root: { run: () => {} },
      ...Object.fromEntries(Array.from({ length: 6 }, (_, i) => [`leaf${i}`, { after: ["root"], run: () => {} }])),
    });
    const { stateDir, store } = await project([fanOut]);
    startWorker({ store, pipelines: [fanOut], stateDir, concurrency: 1 });
    await pastTimeResolution();
    const fileBefore = mtime(wakeupFile(stateDir));
    const runId = await startRun(store, fanOut, 1);
    await until("the fan-out run", async () => (await store.getRun(runId))?.state === "success");
    // Six leaves made eligible, one slot: each claim took all it asked for (one).
    expect(mtime(wakeupFile(stateDir)) > fileBefore).toBe(store.watchWork === undefined);
  });

  it("a worker scoped to one run wakes the others after its finishes: they may work on what it does not", async () => {
    const chain = chainOf(3);
    const { stateDir, store } = await project([chain]);
    startWorker({ store, pipelines: [chain], stateDir, runId: "chain@1" });
    await pastTimeResolution();
    const fileBefore = mtime(wakeupFile(stateDir));
    const runId = await startRun(store, chain, 1);
    await until("the chain", async () => (await store.getRun(runId))?.state === "success");
    expect(mtime(wakeupFile(stateDir)) > fileBefore).toBe(store.watchWork === undefined);
  });

  it("a worker that stops right after a finish wakes the others for what it made eligible", async () => {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    const p = pipeline("handover", {}, {
      first: { run: async () => (started(), await released) },
      second: { after: ["first"], run: () => {} },
    });
    const { stateDir, store } = await project([p]);
    const worker = startWorker({ store, pipelines: [p], stateDir, graceMs: 10_000 });
    const runId = await startRun(store, p, 1);
    await running;
    await pastTimeResolution();
    const fileBefore = mtime(wakeupFile(stateDir));
    const stopping = worker.stop(); // no claim from now on: `second` is left to the others
    release();
    await stopping;
    await pastTimeResolution(); // a touch still on its way counts too
    expect((await store.getRun(runId))!.state).toBe("running");
    expect(mtime(wakeupFile(stateDir)) > fileBefore).toBe(store.watchWork === undefined);
  });
});

describe("othersMayFindWork", () => {
  it("is false only for an unscoped claim that took fewer than it asked for", () => {
    expect(othersMayFindWork({ wanted: 30, claimed: 1, scoped: false })).toBe(false);
    expect(othersMayFindWork({ wanted: 30, claimed: 0, scoped: false })).toBe(false);
    expect(othersMayFindWork({ wanted: 30, claimed: 30, scoped: false })).toBe(true);
    expect(othersMayFindWork({ wanted: 0, claimed: 0, scoped: false })).toBe(true);
    expect(othersMayFindWork({ wanted: 30, claimed: null, scoped: false })).toBe(true);
    expect(othersMayFindWork({ wanted: 30, claimed: 1, scoped: true })).toBe(true);
  });
});
