/**
 * The PostgreSQL store alone under a worker's loop: no worker process, no task hosts, no task
 * code, so what is left is the store's own cost per task (its statements, round trips and
 * commits). One process claims up to its free slots (concurrency C) and records each claimed
 * attempt as a success on the next turn of the event loop, as `idem worker` does with no-op
 * tasks, until N units (N/10 runs of 10 independent tasks, enqueued in one transaction) are done.
 * Against a PostgreSQL the benchmark starts with fsync and synchronous_commit on.
 *
 * Prints one JSON line: jobs/s, tasks per claim, commits per task (pg_stat_database), statements
 * sent per task, socket writes per task (the syscalls that carry them: several statements held
 * and written together count once), and the load.
 * BENCH_JOBS (default 4,000), BENCH_CONCURRENCY (default 10), BENCH_HISTORY: finished runs of
 * 10 tasks already in the store (default 0 and 10,000, one measurement each), BENCH_PREFETCH:
 * attempts claimed ahead of free slots into a local queue, as a worker's `prefetch` does
 * (default 0: claims for free slots only, each slot held until its finish is recorded),
 * BENCH_LOOP: how the loop records and claims, "apart" (each finish on its own, `finishAttempt`,
 * grouped by the store's group commit, then a claim: the worker before `finishAndClaim`) or
 * "together" (the results that arrived and the claim in one `finishAndClaim` call: today's
 * worker); default "apart,together", measured in turn, interleaved over BENCH_ROUNDS (default 1).
 * Usage: node bin/run-ts.js bench/pg/store-loop.ts
 */
import { Socket } from "node:net";
import { loadavg } from "node:os";
import pg from "pg";
import { startPostgres, type Server } from "../lib/servers.ts";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import type { AttemptFinish } from "../../src/store/port.ts";

const NAME = "pg-store-loop";
const JOBS = Number(process.env.BENCH_JOBS ?? 4000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 10);
const HISTORIES = (process.env.BENCH_HISTORY ?? "0,10000").split(",").map(Number);
const PREFETCH = Number(process.env.BENCH_PREFETCH ?? 0);
const LOOPS = (process.env.BENCH_LOOP ?? "apart,together").split(",") as ("apart" | "together")[];
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 1);
setTimeout(() => {
  console.log(JSON.stringify({ bench: NAME, error: "did not finish within 900 s" }));
  process.exit(1);
}, 900_000).unref();

const started = await startPostgres();
if ("skipped" in started) {
  console.log(JSON.stringify({ bench: NAME, skipped: started.skipped }));
  process.exit(0);
}
const server: Server = started;

// Every statement a store sends goes through Client#query: counted, to show round trips saved.
let statements = 0;
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  statements++;
  return (query as (...a: unknown[]) => unknown).apply(this, args);
} as typeof query;
// Every write that reaches a socket (a statement alone, or statements written together).
let socketWrites = 0;
for (const method of ["_write", "_writev"] as const) {
  const original = Socket.prototype[method] as (...a: unknown[]) => unknown;
  (Socket.prototype as unknown as Record<string, unknown>)[method] = function (this: Socket, ...args: unknown[]) {
    socketWrites++;
    return original.apply(this, args);
  };
}

async function measure(history: number, loop: "apart" | "together") {
  const schema = `loop_${history}_${loop}`;
  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  const store = new PostgresStore({ connectionString: server.url, schema });
  try {
    await store.migrate();
    await admin.query(`SET search_path TO ${schema}`);
    const seed = async (prefix: string, runs: number, state: string) => {
      await admin.query(`INSERT INTO runs (run_id, pipeline_id, interval_start, interval_end, business_date, state, trigger_kind, graph_version, params, created_at)
        SELECT $1 || i, $1, i, i + 1, '2026-01-01', $3, 'manual', 'bench', '{}', 1 FROM generate_series(1, $2::int) AS i`, [prefix, runs, state === "success" ? "success" : "queued"]);
      await admin.query(`INSERT INTO task_instances (run_id, task_id, state, max_tries, trigger_rule, queued_at)
        SELECT $1 || i, 't' || j, $3, 1, 'all_success', 1 FROM generate_series(1, $2::int) AS i, generate_series(0, 9) AS j`, [prefix, runs, state]);
      if (state === "success") {
        await admin.query(`INSERT INTO attempts (run_id, task_id, try_number, state, worker_id, pid, started_at, ended_at, log_path)
          SELECT $1 || i, 't' || j, 1, 'success', 'old', 1, 1, 2, 'x' FROM generate_series(1, $2::int) AS i, generate_series(0, 9) AS j`, [prefix, runs]);
      }
    };
    if (history > 0) await seed("old@", history, "success");
    await seed("noop@", JOBS / 10, "queued");
    await admin.query("ANALYZE");
    const commits = async () => Number((await admin.query("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")).rows[0].xact_commit);
    const commitsBefore = await commits();
    const statementsBefore = statements;
    const writesBefore = socketWrites;

    let running = 0;
    let done = 0;
    let claims = 0;
    let claimed = 0;
    const queue: number[] = [];
    /** "together": finishes whose task code ended, waiting for the loop's next call. */
    const results: AttemptFinish[] = [];
    let wake = () => {};
    const finishOf = (attemptId: number): AttemptFinish => ({
      attemptId, workerId: "w1", now: Date.now(), outcome: "success", retryable: true, retryAt: null,
      exitCode: 0, errorClass: null, errorMessage: null, summary: null, skipReason: null,
    });
    // With no prefetch a slot stays taken until its finish is recorded (today's worker); with
    // one, it frees when the task code ends and the finish is recorded behind it.
    const start = (attemptId: number) => {
      running++;
      setImmediate(() => {
        if (PREFETCH > 0) running--;
        if (loop === "together") {
          results.push(finishOf(attemptId));
          wake();
        } else {
          void store.finishAttempt(finishOf(attemptId)).then(() => {
            if (PREFETCH === 0) running--;
            done++;
            wake();
          });
        }
        if (PREFETCH > 0) startQueued();
      });
    };
    const startQueued = () => {
      while (running < CONCURRENCY && queue.length > 0) start(queue.shift()!);
    };
    const wanted = () => (queue.length > PREFETCH / 2 ? 0 : Math.max(0, CONCURRENCY + PREFETCH - running - queue.length));
    const t0 = Date.now();
    while (done < JOBS) {
      const finishes = results.splice(0);
      // The slots those finishes hold free with them, as the worker's do (its slot frees when the task code ends).
      if (PREFETCH === 0) running -= finishes.length;
      const limit = wanted();
      const request = { workerId: "w1", pid: process.pid, limit, now: Date.now(), leaseMs: 60_000, logDir: "/tmp/idem-bench-logs" };
      if (finishes.length > 0) {
        const together = await store.finishAndClaim({ finishes, claim: limit > 0 && claimed < JOBS ? request : null });
        done += finishes.length;
        if (limit > 0 && claimed < JOBS) claims++;
        claimed += together.claimed.length;
        queue.push(...together.claimed.map((a) => a.attemptId));
        startQueued();
        continue;
      }
      if (limit > 0 && claimed < JOBS) {
        const got = await store.claimReady(request);
        claims++;
        claimed += got.length;
        queue.push(...got.map((a) => a.attemptId));
        startQueued();
        if (got.length > 0) {
          // as the worker does: results that already arrived are recorded before the next claim
          await new Promise((r) => setImmediate(r));
          continue;
        }
      }
      if (done < JOBS) await new Promise<void>((r) => { wake = r; setTimeout(r, 100); });
    }
    const ms = Date.now() - t0;
    const commitsPerTask = ((await commits()) - commitsBefore - 1) / JOBS;
    return {
      loop, history, jobs: JOBS, concurrency: CONCURRENCY, prefetch: PREFETCH, jobsPerSecond: Math.round(JOBS / (ms / 1000)), ms,
      tasksPerClaim: +(claimed / claims).toFixed(2), commitsPerTask: +commitsPerTask.toFixed(3),
      statementsPerTask: +((statements - statementsBefore) / JOBS).toFixed(2),
      socketWritesPerTask: +((socketWrites - writesBefore) / JOBS).toFixed(3),
      load: loadavg().map((l) => +l.toFixed(1)),
    };
  } finally {
    await store.close();
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => {});
    await admin.end();
  }
}

try {
  const results = [];
  for (let round = 0; round < ROUNDS; round++) {
    for (const history of HISTORIES) for (const loop of LOOPS) results.push({ round, ...(await measure(history, loop)) });
  }
  console.log(JSON.stringify({ bench: NAME, postgres: "fsync on, synchronous_commit on", results }));
} finally {
  await server.stop();
}
process.exit(0);
