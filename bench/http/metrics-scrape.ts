/**
 * GET /metrics over real HTTP on 127.0.0.1, as Prometheus scrapes it: a project of 100 pipelines
 * with 10,000 finished runs (50,000 task instances) against the same project with no history,
 * scrapes interleaved so both see the same load. SQLite always; PostgreSQL too when
 * IDEM_TEST_PG_URL (or IDEM_BENCH_PG_URL) is set. The store's facts are read at each scrape, so
 * this is the cost a scrape interval pays.
 * Prints one JSON line. Target (issue 29): p50 under 100 ms with the history, on both stores.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { systemClock, type Clock } from "../../src/core/model/clock.ts";
import { Engine } from "../../src/engine/engine.ts";
import { startServer, type RunningServer } from "../../src/http/server.ts";
import type { Store } from "../../src/store/port.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { dropSchema, freshSchema, openPgStore, queryPg } from "../../test/process/postgres-support.ts";
import { historySql, NOW, pipelines } from "../../test/support/metrics-history.ts";
import { bound, percentile } from "./lib/serve.ts";

const SCRAPES = 200;
const WARM_UP = 10;

bound(900, "http-metrics-scrape");

/** The instant the history was written for, so promises and leases read the same at every scrape. */
const clock: Clock = { now: () => NOW, sleep: systemClock.sleep };

interface Scraped {
  server: RunningServer;
  engine: Engine;
}

async function serve(store: Store, stateDir: string): Promise<Scraped> {
  const engine = new Engine({ store, clock, stateDir, pipelines });
  const server = await startServer(engine, { host: "127.0.0.1", port: 0, localUser: "bench" });
  return { engine, server };
}

async function scrape(target: Scraped): Promise<{ ms: number; series: number }> {
  const t0 = performance.now();
  const response = await fetch(`${target.server.url}/metrics`);
  const text = await response.text();
  const ms = performance.now() - t0;
  if (response.status !== 200) throw new Error(`/metrics: ${response.status} ${text.slice(0, 200)}`);
  return { ms, series: text.split("\n").filter((line) => line !== "" && !line.startsWith("#")).length };
}

async function compare(targets: Record<string, Scraped>) {
  const names = Object.keys(targets);
  const times: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  const series: Record<string, number> = {};
  for (let i = 0; i < WARM_UP; i++) for (const n of names) await scrape(targets[n]!);
  for (let i = 0; i < SCRAPES; i++) {
    for (let k = 0; k < names.length; k++) {
      const n = names[(i + k) % names.length]!;
      const { ms, series: count } = await scrape(targets[n]!);
      times[n]!.push(ms);
      series[n] = count;
    }
  }
  const result = Object.fromEntries(names.map((n) => {
    const sorted = times[n]!.sort((a, b) => a - b);
    return [n, { p50: percentile(sorted, 0.5), p95: percentile(sorted, 0.95), series: series[n] }];
  }));
  return { ...result, ratioHistoryToEmpty: +(result.history!.p50 / result.empty!.p50).toFixed(2) };
}

async function closeAll(targets: Scraped[]): Promise<void> {
  for (const t of targets) {
    await t.engine.changeFeed().close();
    await t.server.close();
  }
}

async function onSqlite() {
  const dir = mkdtempSync(join(tmpdir(), "idem-bench-scrape-"));
  const stores: SqliteStore[] = [];
  const targets: Scraped[] = [];
  try {
    const open = async (name: string, history: boolean) => {
      const file = join(dir, `${name}.db`);
      const first = new SqliteStore(file);
      await first.migrate();
      await first.close();
      if (history) {
        const db = new Database(file);
        db.transaction(() => {
          for (const statement of historySql("sqlite")) db.exec(statement);
        })();
        db.exec("ANALYZE");
        db.close();
      }
      const store = new SqliteStore(file);
      await store.migrate();
      stores.push(store);
      const target = await serve(store, join(dir, `state-${name}`));
      targets.push(target);
      return target;
    };
    return await compare({ empty: await open("empty", false), history: await open("history", true) });
  } finally {
    await closeAll(targets);
    for (const s of stores) await s.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function onPostgres(url: string) {
  const dir = mkdtempSync(join(tmpdir(), "idem-bench-scrape-pg-"));
  const schemas: string[] = [];
  const stores: Store[] = [];
  const targets: Scraped[] = [];
  try {
    const open = async (name: string, history: boolean) => {
      const schema = freshSchema();
      schemas.push(schema);
      const store = await openPgStore(url, schema);
      stores.push(store);
      if (history) {
        for (const statement of historySql("postgres")) await queryPg(url, schema, statement);
        await queryPg(url, schema, "ANALYZE");
      }
      const target = await serve(store, join(dir, `state-${name}`));
      targets.push(target);
      return target;
    };
    return await compare({ empty: await open("empty", false), history: await open("history", true) });
  } finally {
    await closeAll(targets);
    for (const s of stores) await s.close();
    for (const schema of schemas) await dropSchema(url, schema);
    rmSync(dir, { recursive: true, force: true });
  }
}

const url = process.env.IDEM_TEST_PG_URL ?? process.env.IDEM_BENCH_PG_URL;
const sqlite = await onSqlite();
const postgres = url ? await onPostgres(url) : "skipped: set IDEM_TEST_PG_URL";
console.log(JSON.stringify({ bench: "http-metrics-scrape", pipelines: pipelines.length, runs: 10_000, scrapes: SCRAPES, sqlite, postgres }));
