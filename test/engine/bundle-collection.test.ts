import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { Clock } from "../../src/core/model/clock.ts";
import { collectableVersions } from "../../src/core/policy/bundle-retention.ts";
import { collectBundles } from "../../src/engine/records/bundle-collection.ts";
import type { Store } from "../../src/store/port.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { dropSchema, freshSchema, openPgStore, testPostgresUrl } from "../process/postgres-support.ts";
import { newRun, tasksOf } from "../support/shapes.ts";
import { pipeline } from "../../src/core/pipeline/define.ts";
import { pinCode } from "../../src/engine/project/code-of.ts";
import { Scheduler } from "../../src/engine/scheduler/scheduler.ts";
import { EngineEvents } from "../../src/engine/events/engine-events.ts";

const DAY = 86_400_000;
const NOW = Date.parse("2026-12-01T00:00:00Z");
const OLD = NOW - 90 * DAY;
const clock: Clock = { now: () => NOW, sleep: async () => {} };
const retention = { keepNewest: 1, keepDays: 30 };

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe("which bundles the retention rule lets go", () => {
  it("keeps the newest versions and those recorded within the window, and lets the rest go oldest first", () => {
    const versions = [
      { codeVersion: "c3", createdAt: NOW - 40 * DAY },
      { codeVersion: "c1", createdAt: NOW - 90 * DAY },
      { codeVersion: "c4", createdAt: NOW - 10 * DAY },
      { codeVersion: "c2", createdAt: NOW - 60 * DAY },
      { codeVersion: "c5", createdAt: NOW - 1 * DAY },
    ];
    expect(collectableVersions(versions, { keepNewest: 1, keepDays: 30 }, NOW)).toEqual(["c1", "c2", "c3"]);
    expect(collectableVersions(versions, { keepNewest: 3, keepDays: 0 }, NOW)).toEqual(["c1", "c2"]);
    expect(collectableVersions(versions, { keepNewest: 1, keepDays: 50 }, NOW)).toEqual(["c1", "c2"]);
  });
});

/** Two handles on one store: the collector's and the one creating runs and claiming. */
async function twoHandles(kind: "sqlite" | "postgres", dir: string): Promise<[Store, Store]> {
  if (kind === "sqlite") {
    const a = new SqliteStore(join(dir, "state.db"));
    await a.migrate();
    const b = new SqliteStore(join(dir, "state.db"));
    await b.migrate();
    cleanups.push(() => a.close(), () => b.close());
    return [a, b];
  }
  const url = testPostgresUrl()!;
  const schema = freshSchema();
  const a = await openPgStore(url, schema);
  const b = await openPgStore(url, schema);
  cleanups.push(async () => { await a.close(); await b.close(); await dropSchema(url, schema); });
  return [a, b];
}

const kinds = (["sqlite", "postgres"] as const).filter((k) => k === "sqlite" || testPostgresUrl() !== null);

/**
 * Who collects: a person (`idem versions --collect`) or the leading scheduler on its schedule,
 * which calls the same collection; `at` is the instant its last collection marked versions at.
 */
interface Collector {
  collect: () => Promise<unknown>;
  at: () => number;
  /** Turns waited per step of the race: a scheduler's tick does more before it collects (the lead, the schedule). */
  spread: number;
}

const byHand = (store: Store): Collector => ({ collect: () => collectBundles(store, clock, "p", { actor: "gc", reason: null, retention, auditIfNone: true }), at: () => NOW, spread: 1 });

/** A pipeline "p" loaded from a bundle (its code version `cur00`, newer than every other). */
function bundledPipeline(bundles: string) {
  const p = pipeline("p", {}, { a: { run: () => {} } });
  pinCode(p, { codeVersion: "cur00", packages: {}, file: "p.ts", location: bundles, bundle: join(bundles, "cur00.mjs") });
  return p;
}

/** A scheduler collecting every day; each collection is its tick a day after the last. */
function byScheduler(store: Store, bundles: string): Collector {
  let now = NOW;
  const scheduler = new Scheduler({
    store, clock: { now: () => now, sleep: async () => {} }, pipelines: [bundledPipeline(bundles)], holder: "s1", bundleCollection: { everyMs: DAY, retention },
  });
  return { collect: async () => { now += DAY; await scheduler.tick(); }, at: () => now, spread: 8 };
}

const collectors = kinds.flatMap((kind) => [{ kind, by: "by hand" as const }, { kind, by: "by the scheduler" as const }]);

describe.each(collectors)("collecting bundles while runs are created and claimed on them ($kind, $by)", ({ kind, by }) => {
  it("never removes a bundle a run is then pinned to or an attempt then runs", async () => {
    const dir = mkdtempSync(join(tmpdir(), "idem-bundle-gc-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const bundles = join(dir, "bundles");
    mkdirSync(bundles);
    const [collectorStore, creator] = await twoHandles(kind, dir);
    const collector = by === "by hand" ? byHand(collectorStore) : byScheduler(collectorStore, bundles);
    await creator.savePipelineVersion({ pipelineId: "p", version: "flat", definition: {}, edges: [], createdAt: OLD });
    const store = (codeVersion: string, createdAt: number) => {
      writeFileSync(join(bundles, `${codeVersion}.json`), "{}");
      writeFileSync(join(bundles, `${codeVersion}.mjs`), "export {};");
      return creator.saveCodeVersion({ pipelineId: "p", codeVersion, graphVersion: "flat", file: "p.ts", location: bundles, packages: {}, createdAt, createdBy: null });
    };
    // SQLite answers synchronously: waiting microtask turns interleaves the two at each step of
    // the collection. PostgreSQL answers over the network: waiting round trips spreads them.
    const ticks = async (n: number) => { for (let i = 0; i < n; i++) await (kind === "sqlite" ? null : creator.getRun("none")); };
    let pinned = 0;
    let refused = 0;
    for (let i = 0; i < 24; i++) {
      const old = `a${i.toString(16).padStart(2, "0")}`;
      await store(old, OLD + 2 * i);
      await store(`b${i.toString(16).padStart(2, "0")}`, OLD + 2 * i + 1);
      const day = new Date(Date.parse("2026-01-01T00:00:00Z") + i * DAY).toISOString().slice(0, 10);
      const [, created] = await Promise.all([
        collector.collect(),
        ticks((i % 8) * collector.spread).then(() => creator.createRunIfAbsent(newRun({ businessDate: day, graphVersion: "flat", codeVersion: old, tasks: tasksOf(["a"]), createdAt: OLD })).then(() => true, (error: Error) => {
          expect(error.message).toContain(`code version ${old} of pipeline p was collected`);
          return false;
        })),
      ]);
      const listed = (await creator.listCodeVersions("p")).find((v) => v.codeVersion === old)!;
      if (created) {
        pinned++;
        expect(listed.collectedAt).toBeNull();
        expect(existsSync(join(bundles, `${old}.mjs`))).toBe(true);
        // Claiming its attempt while another collection runs: the attempt finds its bundle.
        const [, claimed] = await Promise.all([
          collector.collect(),
          ticks((i % 5) * collector.spread).then(() => creator.claimReady({ workerId: "w", pid: 1, limit: 1, now: OLD + 1, leaseMs: 60_000, runId: `p@${day}`, logDir: join(dir, "logs") })),
        ]);
        expect(claimed.map((a) => a.codeVersion)).toEqual([old]);
        expect(existsSync(join(bundles, `${old}.mjs`))).toBe(true);
      } else {
        refused++;
        expect(listed.collectedAt).toBe(collector.at());
      }
    }
    expect(pinned).toBeGreaterThan(0);
    // On SQLite the interleaving is decided by the turns waited, so both orders are certain to be seen.
    if (kind === "sqlite") expect(refused).toBeGreaterThan(0);
  });
});

describe("the leading scheduler collects old bundles on its schedule", () => {
  it("collects at its first tick as leader and then once a day, audited as the scheduler, keeping a version a queued run uses; nothing with collection off", async () => {
    const dir = mkdtempSync(join(tmpdir(), "idem-bundle-gc-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const bundles = join(dir, "bundles");
    mkdirSync(bundles);
    const [store] = await twoHandles("sqlite", dir);
    await store.savePipelineVersion({ pipelineId: "p", version: "flat", definition: {}, edges: [], createdAt: OLD });
    const stored = async (codeVersion: string) => {
      writeFileSync(join(bundles, `${codeVersion}.json`), "{}");
      writeFileSync(join(bundles, `${codeVersion}.mjs`), "export {};");
      await store.saveCodeVersion({ pipelineId: "p", codeVersion, graphVersion: "flat", file: "p.ts", location: bundles, packages: {}, createdAt: OLD, createdBy: null });
    };
    const present = (codeVersion: string) => existsSync(join(bundles, `${codeVersion}.mjs`));
    await stored("old01");
    await stored("live1");
    await store.createRunIfAbsent(newRun({ businessDate: "2026-01-01", graphVersion: "flat", codeVersion: "live1", tasks: tasksOf(["a"]), createdAt: OLD }));

    const off = new Scheduler({ store, clock, pipelines: [bundledPipeline(bundles)], holder: "s0", bundleCollection: null });
    await off.tick();
    expect([present("old01"), present("live1")]).toEqual([true, true]);
    await store.resignLead("scheduler", "s0");

    let now = NOW;
    const events = new EngineEvents();
    const told: unknown[] = [];
    events.on("bundles:collected", (p) => told.push(p));
    const scheduler = new Scheduler({
      store, clock: { now: () => now, sleep: async () => {} }, pipelines: [bundledPipeline(bundles)], holder: "s1", events, bundleCollection: { everyMs: DAY, retention },
    });
    await scheduler.tick();
    expect([present("old01"), present("live1")]).toEqual([false, true]);
    expect(told).toEqual([{ pipelineId: "p", collected: ["old01"], needed: ["live1"] }]);
    const audit = await store.pageAudit({ action: "bundles-collect", limit: 10 });
    expect(audit.map((e) => [e.actor, e.reason, e.details])).toEqual([["scheduler", "scheduled collection, every 1d", { retention, collected: ["old01"], needed: ["live1"] }]]);

    // Not due again for a day: a version that becomes collectable waits for the next collection.
    await stored("old02");
    now += DAY - 1;
    await scheduler.tick();
    expect(present("old02")).toBe(true);
    now += 1;
    await scheduler.tick();
    expect(present("old02")).toBe(false);
    // A collection that removes nothing writes no entry: only the two that did.
    now += DAY;
    await scheduler.tick();
    expect((await store.pageAudit({ action: "bundles-collect", limit: 10 })).map((e) => e.details.collected)).toEqual([["old02"], ["old01"]]);
  });
});

describe("a scheduled collection that fails", () => {
  it("is told as bundles:collect-failed and leaves the tick to go on: the schedule never waits on it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "idem-bundle-gc-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const [store] = await twoHandles("sqlite", dir);
    // The store answers everything but the collection's first read.
    const failing = new Proxy(store, {
      get: (target, key) => {
        if (key === "listCodeVersions") return async () => { throw new Error("the bundle index is unreadable"); };
        const value = Reflect.get(target, key);
        return typeof value === "function" ? value.bind(target) : value;
      },
    }) as Store;
    const events = new EngineEvents();
    const failed: unknown[] = [];
    events.on("bundles:collect-failed", (p) => failed.push(p));
    const scheduler = new Scheduler({ store: failing, clock, pipelines: [bundledPipeline(join(dir, "bundles"))], holder: "s1", events, bundleCollection: { everyMs: DAY, retention } });
    const tick = await scheduler.tick();
    expect(tick.leader).toBe(true);
    expect(failed).toEqual([{ pipelineId: "p", error: "the bundle index is unreadable" }]);
  });
});
