/**
 * What the change feed costs the hot path: claiming and finishing task instances (create run ->
 * claim -> finish, which makes the child eligible and ends the run) on a store whose feed
 * triggers are in place, against the same store with them dropped; rounds interleaved. SQLite
 * always; PostgreSQL too when IDEM_TEST_PG_URL (or IDEM_BENCH_PG_URL) is set.
 * Prints one JSON line: microseconds per task instance, and the ratio. Target: at most 1.2x.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import pg from "pg";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import type { Store } from "../../src/store/port.ts";
import { bound, percentile } from "./lib/serve.ts";

const RUNS_PER_ROUND = 50;
const ROUNDS = 24;
const DAY = 86_400_000;

bound(900, "http-feed-cost");

let day = 0;
/** One round: RUNS_PER_ROUND runs of two tasks (a -> b), each claimed and finished. Returns µs per task instance. */
async function round(store: Store): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < RUNS_PER_ROUND; i++) {
    const start = Date.UTC(2000, 0, 1) + day++ * DAY;
    const runId = `p@${start}`;
    await store.createRunIfAbsent({
      runId, pipelineId: "p", intervalStart: start, intervalEnd: start + DAY, businessDate: String(start), graphVersion: "v1",
      trigger: "manual", triggeredBy: null, reason: null, params: {}, createdAt: start,
      tasks: [
        { taskId: "a", hasUpstream: false, triggerRule: "all_success", maxTries: 1, pool: null, slots: 1, priority: 0 },
        { taskId: "b", hasUpstream: true, triggerRule: "all_success", maxTries: 1, pool: null, slots: 1, priority: 0 },
      ],
    });
    for (let t = 0; t < 2; t++) {
      const [claim] = await store.claimReady({ workerId: "w", pid: 1, limit: 1, now: start + 100 + t * 10, leaseMs: 60_000, runId, logDir: "/nonexistent/logs" });
      if (!claim) throw new Error(`nothing to claim in ${runId} (task ${t})`);
      await store.finishAttempt({
        attemptId: claim!.attemptId, workerId: "w", now: start + 105 + t * 10, outcome: "success", retryable: true, retryAt: null,
        exitCode: 0, errorClass: null, errorMessage: null, summary: null, skipReason: null,
      });
    }
  }
  return ((performance.now() - t0) * 1000) / (RUNS_PER_ROUND * 2);
}

async function compare(withFeed: Store, without: Store) {
  for (const store of [withFeed, without]) {
    await store.savePipelineVersion({ pipelineId: "p", version: "v1", definition: {}, edges: [{ parent: "a", child: "b" }], createdAt: 0 });
  }
  const times = { withFeed: [] as number[], withoutFeed: [] as number[] };
  await round(withFeed);
  await round(without);
  for (let r = 0; r < ROUNDS; r++) {
    if (r % 2 === 0) {
      times.withFeed.push(await round(withFeed));
      times.withoutFeed.push(await round(without));
    } else {
      times.withoutFeed.push(await round(without));
      times.withFeed.push(await round(withFeed));
    }
  }
  const median = (xs: number[]) => percentile([...xs].sort((a, b) => a - b), 0.5);
  const result = { withFeedUs: median(times.withFeed), withoutFeedUs: median(times.withoutFeed) };
  return { ...result, ratio: +(result.withFeedUs / result.withoutFeedUs).toFixed(2) };
}

const dir = mkdtempSync(join(tmpdir(), "idem-bench-feed-"));
const sqliteWith = new SqliteStore(join(dir, "with.db"));
const sqliteWithout = new SqliteStore(join(dir, "without.db"));
await sqliteWith.migrate();
await sqliteWithout.migrate();
for (const { name } of sqliteWithout.db.prepare("SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'change_feed%'").all() as { name: string }[]) {
  sqliteWithout.db.exec(`DROP TRIGGER ${name}`);
}
const sqlite = await compare(sqliteWith, sqliteWithout);
await sqliteWith.close();
await sqliteWithout.close();
rmSync(dir, { recursive: true, force: true });

const url = process.env.IDEM_TEST_PG_URL ?? process.env.IDEM_BENCH_PG_URL;
let postgres: unknown = "skipped: set IDEM_TEST_PG_URL";
if (url) {
  const schemas = [`bench_${randomBytes(4).toString("hex")}`, `bench_${randomBytes(4).toString("hex")}`];
  const [withFeed, without] = schemas.map((schema) => new PostgresStore({ connectionString: url, schema, poolSize: 4 }));
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    await withFeed!.migrate();
    await without!.migrate();
    for (const table of ["runs", "task_instances", "incidents"]) await admin.query(`DROP TRIGGER change_feed_${table} ON ${schemas[1]}.${table}`);
    postgres = await compare(withFeed!, without!);
  } finally {
    await withFeed!.close();
    await without!.close();
    for (const schema of schemas) await admin.query(`DROP SCHEMA ${schema} CASCADE`);
    await admin.end();
  }
}

console.log(JSON.stringify({ bench: "http-feed-cost", unit: "µs per task instance (create, claim, finish)", runsPerRound: RUNS_PER_ROUND, rounds: ROUNDS, sqlite, postgres }));
