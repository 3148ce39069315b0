/**
 * GET /api/v1/pipelines/{id}/runs over real HTTP on 127.0.0.1: a store with 100,000 finished runs
 * against an empty one (and one holding a single page), requests interleaved so both see the same
 * load. Also a page deep in the history (by cursor). SQLite always; PostgreSQL too when
 * IDEM_TEST_PG_URL (or IDEM_BENCH_PG_URL) is set.
 * Prints one JSON line. Target: p50 with 100,000 runs within 2x of the empty store.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import pg from "pg";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import type { Store } from "../../src/store/port.ts";
import { benchServer, bound, percentile, type BenchServer } from "./lib/serve.ts";

const HISTORY = 100_000;
const REQUESTS = 400;
const DAY = 86_400_000;
const FIRST = Date.parse("1750-01-01T00:00:00Z");

bound(900, "http-runs-page");

function runRow(i: number) {
  const start = FIRST + i * DAY;
  return { runId: `bench@${new Date(start).toISOString().slice(0, 10)}`, start, end: start + DAY, date: new Date(start).toISOString().slice(0, 10) };
}

async function fillSqlite(store: SqliteStore, runs: number): Promise<void> {
  const insert = store.db.prepare(`
    INSERT INTO runs (run_id, pipeline_id, interval_start, interval_end, business_date, state, trigger_kind, triggered_by, reason,
                      graph_version, params, created_at, started_at, ended_at)
    VALUES (?, 'bench', ?, ?, ?, 'success', 'schedule', NULL, NULL, 'v1', '{}', ?, ?, ?)`);
  store.db.transaction(() => {
    for (let i = 0; i < runs; i++) {
      const r = runRow(i);
      insert.run(r.runId, r.start, r.end, r.date, r.end, r.end + 1000, r.end + 60_000);
    }
  })();
}

async function fillPostgres(url: string, schema: string, runs: number): Promise<void> {
  const client = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` });
  await client.connect();
  try {
    await client.query(`
      INSERT INTO runs (run_id, pipeline_id, interval_start, interval_end, business_date, state, trigger_kind, graph_version, params, created_at, started_at, ended_at)
      SELECT 'bench@' || to_char(to_timestamp(s / 1000) AT TIME ZONE 'UTC', 'YYYY-MM-DD'), 'bench', s, s + $2, to_char(to_timestamp(s / 1000) AT TIME ZONE 'UTC', 'YYYY-MM-DD'),
             'success', 'schedule', 'v1', '{}', s + $2, s + $2 + 1000, s + $2 + 60000
      FROM generate_series($1::bigint, $1::bigint + ($3::bigint - 1) * $2, $2::bigint) AS s`, [FIRST, DAY, runs]);
    await client.query("ANALYZE runs");
  } finally {
    await client.end();
  }
}

async function timed(server: BenchServer, path: string): Promise<number> {
  const t0 = performance.now();
  const response = await fetch(`${server.server.url}${path}`, { headers: { authorization: `Bearer ${server.token}` } });
  const body = (await response.json()) as { items: unknown[] };
  const ms = performance.now() - t0;
  if (response.status !== 200) throw new Error(`${path}: ${response.status} ${JSON.stringify(body)}`);
  return ms;
}

/** Interleaved rounds: each round asks every server once, in a rotating order. */
async function compare(servers: Record<string, { server: BenchServer; path: string }>) {
  const names = Object.keys(servers);
  const times: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  for (let i = 0; i < 30; i++) for (const n of names) await timed(servers[n]!.server, servers[n]!.path); // warm-up
  for (let i = 0; i < REQUESTS; i++) {
    for (let k = 0; k < names.length; k++) {
      const n = names[(i + k) % names.length]!;
      times[n]!.push(await timed(servers[n]!.server, servers[n]!.path));
    }
  }
  return Object.fromEntries(names.map((n) => {
    const sorted = times[n]!.sort((a, b) => a - b);
    return [n, { p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99) }];
  }));
}

async function deepCursor(server: BenchServer): Promise<string> {
  // The cursor of a page half-way back in history: the interval start of the run before it.
  const key = FIRST + Math.floor(HISTORY / 2) * DAY;
  return Buffer.from(JSON.stringify(key)).toString("base64url");
}

async function measure(open: (runs: number) => Promise<{ store: Store; done: () => Promise<void> }>) {
  const dir = mkdtempSync(join(tmpdir(), "idem-bench-http-"));
  const made: { server: BenchServer; done: () => Promise<void> }[] = [];
  try {
    const serverWith = async (runs: number) => {
      const { store, done } = await open(runs);
      const server = await benchServer(store, join(dir, `state-${runs}`));
      made.push({ server, done });
      return server;
    };
    const empty = await serverWith(0);
    const onePage = await serverWith(50);
    const full = await serverWith(HISTORY);
    const path = "/api/v1/pipelines/bench/runs?limit=50";
    const result = await compare({
      empty: { server: empty, path },
      onePage: { server: onePage, path },
      full: { server: full, path },
      fullDeep: { server: full, path: `${path}&cursor=${await deepCursor(full)}` },
      fullFiltered: { server: full, path: `${path}&state=success&trigger=schedule&from=1800-01-01&to=1900-12-31` },
    });
    return { ...result, ratioFullToEmpty: +(result.full!.p50 / result.empty!.p50).toFixed(2), ratioFullToOnePage: +(result.full!.p50 / result.onePage!.p50).toFixed(2) };
  } finally {
    for (const m of made) {
      await m.server.close();
      await m.done();
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

const sqlite = await measure(async (runs) => {
  const dir = mkdtempSync(join(tmpdir(), "idem-bench-sqlite-"));
  const store = new SqliteStore(join(dir, "state.db"));
  await store.migrate();
  await fillSqlite(store, runs);
  return { store, done: async () => { await store.close(); rmSync(dir, { recursive: true, force: true }); } };
});

const url = process.env.IDEM_TEST_PG_URL ?? process.env.IDEM_BENCH_PG_URL;
let postgres: unknown = "skipped: set IDEM_TEST_PG_URL";
if (url) {
  postgres = await measure(async (runs) => {
    const schema = `bench_${randomBytes(4).toString("hex")}`;
    const store = new PostgresStore({ connectionString: url, schema, poolSize: 4 });
    await store.migrate();
    await fillPostgres(url, schema, runs);
    return {
      store,
      done: async () => {
        await store.close();
        const client = new pg.Client({ connectionString: url });
        await client.connect();
        await client.query(`DROP SCHEMA ${schema} CASCADE`);
        await client.end();
      },
    };
  });
}

console.log(JSON.stringify({ bench: "http-runs-page", history: HISTORY, requests: REQUESTS, unit: "ms", sqlite, postgres }));
