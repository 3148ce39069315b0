/**
 * The SQLite store alone under a worker's loop: no worker process, no task hosts, no task code,
 * so what is left is the store's own cost per task (its statements, triggers, savepoints and
 * commits). One process claims B attempts, then records each as a success, all awaited together
 * (so they share one finish transaction, as a worker's finishes that arrive in one turn do),
 * until N units (N/10 runs of 10 independent tasks, queued) are done. Against a file in WAL mode
 * with synchronous = NORMAL, as the store opens it.
 *
 * Prints one JSON line per claim batch: jobs/s, microseconds per task (all, claim, finish, and
 * the process's CPU time: on a shared machine the steadier figure), write transactions per task,
 * and the load. With BENCH_STATEMENTS=1 also the microseconds per task
 * spent in each prepared statement (wrapping run/get/all: costs a little itself).
 * BENCH_JOBS (default 20,000), BENCH_BATCH: claim sizes, comma-separated (default 1,10,30,100),
 * BENCH_ROUNDS (default 1): rounds over all batch sizes, interleaved.
 * Usage: node bin/run-ts.js bench/sqlite/store-loop.ts
 */
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import type Database from "better-sqlite3";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import type { AttemptFinish } from "../../src/store/port.ts";

const NAME = "sqlite-store-loop";
const JOBS = Number(process.env.BENCH_JOBS ?? 20_000);
const BATCHES = (process.env.BENCH_BATCH ?? "1,10,30,100").split(",").map(Number);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 1);
const STATEMENTS = process.env.BENCH_STATEMENTS === "1";
setTimeout(() => {
  console.log(JSON.stringify({ bench: NAME, error: "did not finish within 600 s" }));
  process.exit(1);
}, 600_000).unref();

/** Counts top-level write transactions: a transaction function entered outside any transaction. */
function countTransactions(db: Database.Database): () => number {
  let count = 0;
  const transaction = db.transaction.bind(db);
  type Fn = (...a: unknown[]) => unknown;
  db.transaction = ((fn: Fn) => {
    const wrapped = transaction(fn);
    const counting = (run: Fn): Fn => (...a) => {
      if (!db.inTransaction) count++;
      return run(...a);
    };
    return Object.assign(counting(wrapped), {
      default: counting(wrapped.default), deferred: counting(wrapped.deferred),
      immediate: counting(wrapped.immediate), exclusive: counting(wrapped.exclusive),
    });
  }) as unknown as typeof db.transaction;
  return () => count;
}

function timeStatements(store: SqliteStore): Map<string, number> {
  const spent = new Map<string, number>();
  const statements = (store as unknown as { statements: Record<string, Database.Statement> }).statements;
  for (const [name, statement] of Object.entries(statements)) {
    for (const method of ["run", "get", "all"] as const) {
      const original = (statement[method] as (...a: unknown[]) => unknown).bind(statement);
      (statement as unknown as Record<string, unknown>)[method] = (...a: unknown[]) => {
        const t = performance.now();
        try {
          return original(...a);
        } finally {
          spent.set(name, (spent.get(name) ?? 0) + (performance.now() - t) * 1000);
        }
      };
    }
  }
  return spent;
}

async function measure(batch: number) {
  const dir = mkdtempSync(join(tmpdir(), "idem-sqlite-store-loop-"));
  const store = new SqliteStore(join(dir, "state.db"));
  try {
    await store.migrate();
    const runs = JOBS / 10;
    store.db.exec(`INSERT INTO runs (run_id, pipeline_id, interval_start, interval_end, business_date, state, trigger_kind, graph_version, params, created_at)
      WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ${runs})
      SELECT 'noop@' || i, 'noop', i, i + 1, '2026-01-01', 'queued', 'manual', 'bench', '{}', 1 FROM s`);
    store.db.exec(`INSERT INTO task_instances (run_id, task_id, state, max_tries, trigger_rule, queued_at)
      WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ${runs}),
                     t(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM t WHERE j < 9)
      SELECT 'noop@' || i, 't' || j, 'queued', 1, 'all_success', 1 FROM s, t`);
    const transactions = countTransactions(store.db);
    const spent = STATEMENTS ? timeStatements(store) : null;
    const finishOf = (attemptId: number): AttemptFinish => ({
      attemptId, workerId: "w1", now: Date.now(), outcome: "success", retryable: true, retryAt: null,
      exitCode: 0, errorClass: null, errorMessage: null, summary: null, skipReason: null,
    });
    let done = 0;
    let claimMs = 0;
    let finishMs = 0;
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    while (done < JOBS) {
      const a = performance.now();
      const got = await store.claimReady({ workerId: "w1", pid: process.pid, limit: batch, now: Date.now(), leaseMs: 60_000, logDir: join(dir, "logs") });
      const b = performance.now();
      claimMs += b - a;
      if (got.length === 0) break;
      const outcomes = await Promise.all(got.map((g) => store.finishAttempt(finishOf(g.attemptId))));
      if (outcomes.some((o) => !o.accepted)) throw new Error("a finish was refused");
      finishMs += performance.now() - b;
      done += got.length;
    }
    const ms = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    if (done !== JOBS) throw new Error(`claimed ${done} of ${JOBS}`);
    const perTask = (x: number) => +((x * 1000) / done).toFixed(1);
    const statements = spent
      ? Object.fromEntries([...spent].sort((x, y) => y[1] - x[1]).map(([name, us]) => [name, +(us / done).toFixed(1)]))
      : undefined;
    return {
      batch, jobs: done, jobsPerSecond: Math.round(done / (ms / 1000)), usPerTask: perTask(ms), claimUsPerTask: perTask(claimMs),
      finishUsPerTask: perTask(finishMs), cpuUsPerTask: +((cpu.user + cpu.system) / done).toFixed(1), transactionsPerTask: +(transactions() / done).toFixed(3),
      load: loadavg().map((l) => +l.toFixed(1)), ...(statements ? { statements } : {}),
    };
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

for (let round = 1; round <= ROUNDS; round++) {
  for (const batch of BATCHES) console.log(JSON.stringify({ bench: NAME, round, ...(await measure(batch)) }));
}
process.exit(0);
