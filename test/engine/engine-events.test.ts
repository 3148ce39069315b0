import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { pipeline } from "../../src/core/pipeline/define.ts";
import { daily } from "../../src/core/time/index.ts";
import { openProject } from "../../src/engine/compose.ts";
import type { Engine } from "../../src/engine/engine.ts";
import { EngineEvents } from "../../src/engine/events/engine-events.ts";
import type { EngineEvent, EngineEventMap, EngineEventName } from "../../src/engine/events/event-map.ts";
import { Watchdog } from "../../src/engine/freshness/watchdog.ts";
import { loadConfig } from "../../src/engine/project/config.ts";
import { Scheduler } from "../../src/engine/scheduler/scheduler.ts";
import { Worker } from "../../src/engine/worker/worker.ts";
import { call, testApp } from "../support/http.ts";
import { ScheduleHarness } from "../support/scheduling.ts";

const repo = resolve(import.meta.dirname, "../..");
let project: string | null = null;
let engine: Engine | undefined;
let h: ScheduleHarness | undefined;

afterEach(async () => {
  await engine?.close();
  engine = undefined;
  await h?.close();
  h = undefined;
  if (project) rmSync(project, { recursive: true, force: true });
  project = null;
});

/** Every event emitted, in order. */
function recorded(events: EngineEvents): EngineEvent[] {
  const seen: EngineEvent[] = [];
  events.onAny((event) => seen.push(event));
  return seen;
}

function payloads<K extends EngineEventName>(seen: readonly EngineEvent[], name: K): EngineEventMap[K][] {
  return seen.filter((e) => e.name === name).map((e) => e.payload as EngineEventMap[K]);
}

async function until<T>(what: string, look: () => Promise<T | undefined> | T | undefined, seen: readonly EngineEvent[], ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const found = await look();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`gave up after ${ms} ms waiting for ${what}; events seen: ${[...new Set(seen.map((e) => e.name))].join(", ")}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const noop = () => {};
const london = (at = "02:00") => daily({ at, timezone: "Europe/London" });

describe("the engine's events, as a real process emits them", () => {
  it("idem dev's parts: scheduler started, lease won, tick, run created, attempt claimed, started and finished, task host started and exited", async () => {
    mkdirSync(join(repo, ".tmp"), { recursive: true });
    project = mkdtempSync(join(repo, ".tmp", "events-"));
    mkdirSync(join(project, "pipelines"));
    writeFileSync(join(project, "idem.config.ts"), `import { defineConfig } from "idem";\nexport default defineConfig({});\n`);
    writeFileSync(join(project, "pipelines", "days.ts"), `import { pipeline, daily } from "idem";
export const days = pipeline("days", { schedule: daily({ at: "00:00" }), start: "2026-01-01", catchup: "latest" }, {
  one: { run: () => ({ rows: 1 }) },
});
`);
    engine = await openProject(await loadConfig(project), { pipelines: true });
    const seen = recorded(engine.events);
    const stop = new AbortController();
    const running = engine.runLongLived("dev", stop.signal, () => Promise.all([engine!.runScheduler(stop.signal), engine!.runWorker(stop.signal, { concurrency: 1 })]).then(() => undefined), { startsScheduler: true });
    let finished: EngineEventMap["attempt:finished"];
    try {
      finished = await until("an attempt's result", () => payloads(seen, "attempt:finished")[0], seen);
      const statuses = engine.processStatus();
      expect(statuses.map((s) => s.part).sort()).toEqual(["scheduler", "task-hosts", "watchdog", "worker"]);
      expect(statuses.find((s) => s.part === "worker")).toMatchObject({ state: { kind: "running" }, finished: 1 });
      expect(statuses.find((s) => s.part === "scheduler")).toMatchObject({ state: { kind: "leading" } });
      expect(statuses.find((s) => s.part === "task-hosts")).toMatchObject({ state: { kind: "open" }, hosts: 1 });
    } finally {
      stop.abort();
      await running;
    }
    const [created] = payloads(seen, "run:created");
    expect(created).toMatchObject({ pipelineId: "days", trigger: "schedule" });
    const locator = { pipelineId: "days", runId: created!.runId, taskId: "one", mapKey: null, tryNumber: 1, businessDate: created!.businessDate, workerId: engine.workerId };
    expect(payloads(seen, "attempt:claimed")[0]).toMatchObject(locator);
    expect(payloads(seen, "attempt:started")[0]).toEqual(locator);
    // The claim that took the attempt, timed: one of the one slot wanted.
    expect(payloads(seen, "worker:claimed").find((c) => c.claimed === 1)).toMatchObject({ workerId: engine.workerId, wanted: 1, durationMs: expect.any(Number) });
    expect(finished).toMatchObject({ ...locator, taskState: "success", runState: "success", outcome: "success", errorClass: null });
    expect(payloads(seen, "scheduler:started")[0]).toMatchObject({ pipelines: 1 });
    expect(payloads(seen, "worker:started")[0]).toMatchObject({ workerId: engine.workerId, concurrency: 1 });
    expect(payloads(seen, "lease:won").map((l) => l.role).sort()).toEqual(["checker", "scheduler"]);
    expect(payloads(seen, "scheduler:tick")[0]).toMatchObject({ leader: true });
    const [host] = payloads(seen, "host:started");
    expect(host!.pid).toBeGreaterThan(0);
    // The order of events follows the work: created, claimed, started, finished.
    const order = seen.map((e) => e.name);
    expect(order.indexOf("run:created")).toBeLessThan(order.indexOf("attempt:claimed"));
    expect(order.indexOf("attempt:claimed")).toBeLessThan(order.indexOf("attempt:started"));
    expect(order.indexOf("attempt:started")).toBeLessThan(order.indexOf("attempt:finished"));
    expect(engine.processStatus().map((s) => s.part)).toEqual(["task-hosts"]);
    await engine.close();
    expect(payloads(seen, "host:exited")).toEqual([expect.objectContaining({ pid: host!.pid, expected: true, hosts: 0 })]);
    engine = undefined;
  });

  it("a standby scheduler: lease lost, naming the leader; its status says whom it stands by for", async () => {
    h = await ScheduleHarness.open([pipeline("p", { schedule: london(), start: "2026-09-01" }, { t: { run: noop } })], "2026-09-02T12:00:00Z");
    await h.scheduler.tick(); // scheduler-1 leads
    const events = new EngineEvents();
    const seen = recorded(events);
    const standby = new Scheduler({ store: h.store, clock: h.clock, pipelines: h.pipelines, holder: "scheduler-2", events });
    await standby.tick();
    expect(payloads(seen, "lease:lost")).toEqual([{ role: "scheduler", holder: "scheduler-2", leader: "scheduler-1" }]);
    expect(standby.status()).toMatchObject({ part: "scheduler", state: { kind: "standing-by", leader: "scheduler-1" } });
  });

  it("an attempt whose worker stopped renewing its lease: attempt lost, with the worker that held it", async () => {
    h = await ScheduleHarness.open([pipeline("p", { schedule: london(), start: "2026-09-01", end: "2026-09-01" }, { t: { run: noop } })], "2026-09-02T12:00:00Z");
    const events = new EngineEvents();
    const seen = recorded(events);
    const scheduler = new Scheduler({ store: h.store, clock: h.clock, pipelines: h.pipelines, holder: "scheduler-1", events });
    await scheduler.tick();
    const [claimed] = await h.store.claimReady({ workerId: "gone", pid: 1, limit: 1, now: h.clock.now(), leaseMs: 30_000, logDir: join(h.dir, "logs") });
    h.clock.advance(31_000);
    await scheduler.tick();
    expect(payloads(seen, "attempt:lost")).toEqual([
      { pipelineId: "p", runId: claimed!.runId, taskId: "t", tryNumber: 1, workerId: "gone", taskState: "failed" },
    ]);
    // Its last try lost, the run ended with it: told by the scheduler that recorded it (the run's span is written from this).
    expect(payloads(seen, "run:ended")).toEqual([{ pipelineId: "p", runId: claimed!.runId, state: "failed", by: "lost-attempt" }]);
  });

  it("the watchdog: incident opened for a scheduler down, resolved when one leads again; its status says it checks", async () => {
    h = await ScheduleHarness.open([pipeline("shop", { schedule: london("07:23"), start: "2026-09-01" }, { t: { run: noop } })], "2026-09-02T06:30:00Z");
    await h.at("2026-09-02T06:30:00Z");
    const events = new EngineEvents();
    const seen = recorded(events);
    const w = new Watchdog({ store: h.store, clock: h.clock, pipelines: h.pipelines, holder: "worker w1", notifiers: {}, defaultNotify: [], intervalMs: 15_000, graceMs: 10 * 60_000, events });
    expect(w.status().state).toEqual({ kind: "idle" });
    await w.pass();
    expect(w.status()).toMatchObject({ state: { kind: "checking" }, lastPassAt: h.clock.now() });
    h.clock.set("2026-09-03T06:12:00Z");
    await h.scheduler.tick(); // its last tick
    for (let t = Date.parse("2026-09-03T06:12:15Z"); t <= Date.parse("2026-09-03T07:30:00Z"); t += 15_000) {
      h.clock.set(t);
      await w.pass();
    }
    const [opened] = payloads(seen, "incident:opened");
    expect(opened).toMatchObject({ pipelineId: null, message: expect.stringMatching(/^scheduler down: /) });
    await new Scheduler({ store: h.store, clock: h.clock, pipelines: h.pipelines, holder: "scheduler-2" }).tick();
    await w.pass();
    expect(payloads(seen, "incident:resolved")).toEqual([{ key: opened!.key, resolution: "scheduler scheduler-2 leads again" }]);
  });

  it("a worker's status goes idle, running, stopped; each recorded attempt counts", async () => {
    h = await ScheduleHarness.open([pipeline("p", { schedule: london(), start: "2026-09-01", end: "2026-09-01" }, { t: { run: noop } })], "2026-09-02T12:00:00Z");
    await h.scheduler.tick();
    const worker = new Worker({ store: h.store, clock: h.clock, pipelines: h.pipelines, stateDir: join(h.dir, ".idem"), workerId: "w1", concurrency: 2 });
    expect(worker.status()).toMatchObject({ part: "worker", state: { kind: "idle" }, finished: 0 });
    await worker.run(new AbortController().signal, async () => true);
    expect(worker.status()).toMatchObject({ state: { kind: "stopped" }, running: 0, queued: 0, finished: 1 });
  });

  it("a mapped instance's attempts carry its key (the task instance is load[key]), which the log names mapKey", async () => {
    const p = pipeline("files", { schedule: london(), start: "2026-09-01", end: "2026-09-01" }, {
      load: { map: { items: () => ["a.csv", "b.csv"] }, run: noop },
    });
    h = await ScheduleHarness.open([p], "2026-09-02T12:00:00Z");
    await h.scheduler.tick();
    const events = new EngineEvents();
    const seen = recorded(events);
    const worker = new Worker({ store: h.store, clock: h.clock, pipelines: h.pipelines, stateDir: join(h.dir, ".idem"), workerId: "w1", concurrency: 2, events });
    await worker.run(new AbortController().signal, async () => true);
    const keyed = payloads(seen, "attempt:finished").filter((a) => a.mapKey !== null);
    expect(keyed.map((a) => [a.taskId, a.mapKey, a.taskState]).sort()).toEqual([["load[a.csv]", "a.csv", "success"], ["load[b.csv]", "b.csv", "success"]]);
    const { locatingFields } = await import("../../src/engine/events/event-lines.ts");
    expect(locatingFields(keyed[0]!)).toMatchObject({ pipeline: "files", task: keyed[0]!.taskId, mapKey: keyed[0]!.mapKey, try: 1, businessDate: "2026-09-01", worker: "w1" });
  });

  it("the HTTP app: request served, with method, path, status and duration", async () => {
    h = await ScheduleHarness.open([pipeline("p", { schedule: london(), start: "2026-09-01" }, { t: { run: noop } })], "2026-09-02T12:00:00Z");
    const seen = recorded(h.engine.events);
    const app = testApp(h.engine, "ana");
    expect((await call(app, "/api/v1/pipelines")).status).toBe(200);
    expect((await call(app, "/api/v1/nowhere")).status).toBe(404);
    const served = payloads(seen, "request:served");
    expect(served.map(({ method, path, status }) => [method, path, status])).toEqual([["GET", "/api/v1/pipelines", 200], ["GET", "/api/v1/nowhere", 404]]);
    expect(served.every((s) => s.durationMs >= 0)).toBe(true);
  });

  it("a subscriber that throws does not stop the emitter or the other subscribers", () => {
    const events = new EngineEvents();
    const heard: string[] = [];
    events.on("pipeline-file:fixed", () => {
      throw new Error("broken subscriber");
    });
    events.on("pipeline-file:fixed", (p) => heard.push(p.file));
    const write = process.stderr.write;
    const errors: string[] = [];
    process.stderr.write = ((text: string) => (errors.push(text), true)) as typeof process.stderr.write;
    try {
      events.emit("pipeline-file:fixed", { file: "a.ts" });
      events.emit("pipeline-file:fixed", { file: "b.ts" });
    } finally {
      process.stderr.write = write;
    }
    expect(heard).toEqual(["a.ts", "b.ts"]);
    expect(errors).toEqual(["a subscriber of pipeline-file:fixed failed: broken subscriber\n"]);
  });
});
