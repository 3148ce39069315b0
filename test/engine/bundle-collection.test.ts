import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { Clock } from "../../src/core/model/clock.ts";
import { collectableVersions } from "../../src/core/policy/bundle-retention.ts";
import { collectBundles } from "../../src/engine/bundle-collection.ts";
import type { Store } from "../../src/store/port.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { dropSchema, freshSchema, openPgStore, testPostgresUrl } from "../process/postgres-support.ts";
import { newRun, tasksOf } from "../support/shapes.ts";

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

describe.each(kinds)("collecting bundles while runs are created and claimed on them (%s)", (kind) => {
  it("never removes a bundle a run is then pinned to or an attempt then runs", async () => {
    const dir = mkdtempSync(join(tmpdir(), "idem-bundle-gc-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const bundles = join(dir, "bundles");
    mkdirSync(bundles);
    const [collector, creator] = await twoHandles(kind, dir);
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
        collectBundles(collector, clock, "p", { actor: "gc", retention }),
        ticks(i % 8).then(() => creator.createRunIfAbsent(newRun({ businessDate: day, graphVersion: "flat", codeVersion: old, tasks: tasksOf(["a"]), createdAt: OLD })).then(() => true, (error: Error) => {
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
          collectBundles(collector, clock, "p", { actor: "gc", retention }),
          ticks(i % 5).then(() => creator.claimReady({ workerId: "w", pid: 1, limit: 1, now: OLD + 1, leaseMs: 60_000, runId: `p@${day}`, logDir: join(dir, "logs") })),
        ]);
        expect(claimed.map((a) => a.codeVersion)).toEqual([old]);
        expect(existsSync(join(bundles, `${old}.mjs`))).toBe(true);
      } else {
        refused++;
        expect(listed.collectedAt).toBe(NOW);
      }
    }
    expect(pinned).toBeGreaterThan(0);
    // On SQLite the interleaving is decided by the turns waited, so both orders are certain to be seen.
    if (kind === "sqlite") expect(refused).toBeGreaterThan(0);
  });
});
