/**
 * The web UI's pages for one run that maps 100,000 items, over real HTTP on 127.0.0.1: the grid
 * (the mapped task one cell), the run page (one row per task), the drill-down's first page, a
 * page deep in the keys (keyset link), a prefix filter and a state filter, each fetched in turn
 * so they see the same load. The run is seeded the fast way (test/support/mapped-seed.ts: the
 * list expanded through the store, a few instances ended), as the browser test does. SQLite
 * always; PostgreSQL too when IDEM_TEST_PG_URL (or IDEM_BENCH_PG_URL) is set.
 * `IDEM_BENCH_MAPPED_ITEMS` sets the list's size (default 100,000) to try the script small.
 * Prints one JSON line. Target (issue 30): each page under 1 s at 100,000 items, on both stores.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Engine } from "../../src/engine/engine.ts";
import { startServer, type RunningServer } from "../../src/http/server.ts";
import type { Store } from "../../src/store/port.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { FakeClock } from "../../src/testing.ts";
import { dropSchema, freshSchema, openPgStore } from "../../test/process/postgres-support.ts";
import { MAPPED_DATE, MAPPED_NOW, MAPPED_PIPELINE, MAPPED_PLAN, MAPPED_RUN, mappedKey, mappedPipeline, seedMappedRun } from "../../test/support/mapped-seed.ts";
import { bound, percentile } from "./lib/serve.ts";

const ITEMS = Number(process.env.IDEM_BENCH_MAPPED_ITEMS ?? 100_000);
const ROUNDS = 30;
const WARM_UP = 3;

bound(1200, "http-mapped-pages");

const drill = `/ui/runs/${MAPPED_RUN}/tasks/load_file/instances`;
const PAGES: Record<string, string> = {
  grid: `/ui/pipelines/${MAPPED_PIPELINE}/grid?days=30&to=${MAPPED_DATE}`,
  run: `/ui/runs/${MAPPED_RUN}`,
  drillFirst: drill,
  drillDeep: `${drill}?after=${mappedKey(Math.floor(ITEMS * 0.9))}`,
  drillPrefix: `${drill}?prefix=${mappedKey(ITEMS - 1).slice(0, -6)}`,
  drillFailed: `${drill}?state=failed`,
};

async function measure(store: Store, stateDir: string) {
  const clock = new FakeClock(MAPPED_NOW);
  const engine = new Engine({ store, clock, stateDir, pipelines: [mappedPipeline] });
  const seedStart = performance.now();
  await seedMappedRun(engine, store, { ...MAPPED_PLAN, items: ITEMS });
  const seedMs = Math.round(performance.now() - seedStart);
  const server: RunningServer = await startServer(engine, { host: "127.0.0.1", port: 0, localUser: "bench" });
  try {
    const names = Object.keys(PAGES);
    const times: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
    const bytes: Record<string, number> = {};
    const get = async (name: string) => {
      const t0 = performance.now();
      const response = await fetch(server.url + PAGES[name]!);
      const text = await response.text();
      const ms = performance.now() - t0;
      if (response.status !== 200) throw new Error(`${PAGES[name]}: ${response.status} ${text.slice(0, 200)}`);
      bytes[name] = text.length;
      return ms;
    };
    for (let i = 0; i < WARM_UP; i++) for (const n of names) await get(n);
    for (let i = 0; i < ROUNDS; i++) for (const n of names) times[n]!.push(await get(n));
    const pages = Object.fromEntries(names.map((n) => {
      const sorted = times[n]!.sort((a, b) => a - b);
      return [n, { p50: percentile(sorted, 0.5), p95: percentile(sorted, 0.95), kb: Math.round(bytes[n]! / 1024) }];
    }));
    return { seedMs, pages };
  } finally {
    await engine.changeFeed().close();
    await server.close();
  }
}

async function onSqlite() {
  const dir = mkdtempSync(join(tmpdir(), "idem-bench-mapped-"));
  const store = new SqliteStore(join(dir, "state.db"));
  try {
    await store.migrate();
    return await measure(store, join(dir, ".idem"));
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function onPostgres(url: string) {
  const dir = mkdtempSync(join(tmpdir(), "idem-bench-mapped-pg-"));
  const schema = freshSchema();
  const store = await openPgStore(url, schema);
  try {
    return await measure(store, join(dir, ".idem"));
  } finally {
    await store.close();
    await dropSchema(url, schema);
    rmSync(dir, { recursive: true, force: true });
  }
}

const url = process.env.IDEM_TEST_PG_URL ?? process.env.IDEM_BENCH_PG_URL;
const sqlite = await onSqlite();
const postgres = url ? await onPostgres(url) : "skipped: set IDEM_TEST_PG_URL";
console.log(JSON.stringify({ bench: "http-mapped-pages", items: ITEMS, rounds: ROUNDS, sqlite, postgres }));
