/**
 * No-op task throughput on one PostgreSQL server, side by side with the Node job queues on the
 * same server in the same run:
 *   idem:            `idem worker` processes (1, 2, 4; concurrency 16, then 64 each) draining 5,000 queued
 *                    no-op task instances (500 runs x 10 tasks), each one claimed with a lease,
 *                    run, and recorded (attempt row, state, log path, run completion).
 *   graphile-worker: the same number of no-op jobs, default configuration (concurrency 10, as in
 *                    its perfTest), and batched (local queue of 500, batched completion).
 *   pg-boss:         the same number of jobs; its workers fetch in batches and wait the polling
 *                    interval between fetches (0.5 s, the smallest allowed), so batch size rules.
 * Jobs are enqueued before the workers drain them; the clock runs from the first job started to
 * the last one finished. Prints one JSON line.
 * Usage: IDEM_TEST_PG_URL=postgres://... node bin/run-ts.js bench/pg/throughput.ts [jobs]
 *        BENCH_CONCURRENCY=16,64 BENCH_WORKERS=1,2,4 choose the idem configurations;
 *        BENCH_IDEM_ONLY=1 skips the job queues.
 */
import pg from "pg";
import { benchUrl, bound, freshSchema, project, sql, startIdem, until, withSchema } from "./lib/cluster.ts";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";

const NAME = "pg-throughput";
bound(900, NAME);
const url = benchUrl(NAME);
const JOBS = Number(process.argv[2] ?? 5000);
const TASKS_PER_RUN = 10;
const RUNS = Math.ceil(JOBS / TASKS_PER_RUN);

const rate = (jobs: number, ms: number) => Math.round(jobs / (ms / 1000));

async function idem(workers: number, concurrency: number) {
  const schema = freshSchema("bench_idem");
  const stateUrl = withSchema(url, schema);
  const { dir, cleanup } = project({
    "idem.config.ts": `import { defineConfig } from "idem";\nexport default defineConfig({ state: ${JSON.stringify(stateUrl)}, concurrency: ${concurrency} });\n`,
    "pipelines/noop.ts": `import { pipeline } from "idem";
const tasks = {};
for (let i = 0; i < ${TASKS_PER_RUN}; i++) tasks["t" + i] = { run: () => {} };
// No cap of its own: the workers' concurrency is what is measured.
export const noop = pipeline("noop", { maxActiveTasks: 100000 }, tasks);
`,
  });
  const store = new PostgresStore({ connectionString: stateUrl });
  await store.migrate();
  await store.close();
  const procs = Array.from({ length: workers }, () => startIdem(dir, "worker"));
  try {
    await until("workers up", async () => (await sql<{ n: number }>(url, "SELECT count(*)::int AS n FROM workers", [], schema))[0]!.n === workers, 60_000, 50);
    await new Promise((r) => setTimeout(r, 500)); // past the first idle polls
    // All the work at once, as a catch-up or a big fan-out makes it: runs and their task instances.
    const client = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` });
    await client.connect();
    const t0 = Date.now();
    await client.query("BEGIN");
    await client.query(
      `INSERT INTO runs (run_id, pipeline_id, interval_start, interval_end, business_date, state, trigger_kind, graph_version, params, created_at)
       SELECT 'noop@' || i, 'noop', i, i + 1, '2026-01-01', 'queued', 'manual', 'bench', '{}', $1 FROM generate_series(1, $2::int) AS i`,
      [t0, RUNS],
    );
    await client.query(
      `INSERT INTO task_instances (run_id, task_id, state, max_tries, trigger_rule, queued_at)
       SELECT 'noop@' || i, 't' || j, 'queued', 1, 'all_success', $1 FROM generate_series(1, $2::int) AS i, generate_series(0, $3::int - 1) AS j`,
      [t0, RUNS, TASKS_PER_RUN],
    );
    await client.query(`SELECT pg_notify($1, '')`, [`idem_work_${schema}`]);
    await client.query("COMMIT");
    // Statistics, as autovacuum would gather them within a minute of a bulk load.
    await client.query("ANALYZE runs, task_instances");
    await until("all tasks done", async () =>
      (await client.query("SELECT count(*)::int AS n FROM runs WHERE state = 'success'")).rows[0].n === RUNS, 300_000, 50);
    const wallMs = Date.now() - t0;
    const [span] = (await client.query("SELECT min(started_at) AS s, max(ended_at) AS e, count(*)::int AS n FROM attempts")).rows;
    await client.end();
    return { workers, concurrency, jobs: span.n, jobsPerSecond: rate(span.n, Number(span.e) - Number(span.s)), wallMs };
  } finally {
    await Promise.all(procs.map((p) => p.stop()));
    cleanup();
    await sql(url, `DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  }
}

async function graphile(label: string, options: { concurrency: number; preset?: Record<string, unknown> }) {
  const { run, makeWorkerUtils, Logger } = await import("graphile-worker");
  const schema = freshSchema("bench_gw");
  const logger = new Logger(() => () => {});
  const utils = await makeWorkerUtils({ connectionString: url, schema, logger });
  try {
    await utils.migrate();
    for (let i = 0; i < JOBS; i += 1000) {
      await utils.addJobs(Array.from({ length: Math.min(1000, JOBS - i) }, () => ({ identifier: "noop", payload: {} })));
    }
    let first = 0;
    let last = 0;
    let done = 0;
    const t0 = Date.now();
    const runner = await run({
      connectionString: url, schema, logger, noHandleSignals: true, concurrency: options.concurrency,
      taskList: { noop: async () => { first ||= Date.now(); done++; last = Date.now(); } },
      preset: options.preset ? { worker: options.preset } : undefined,
    });
    await until("graphile-worker to drain", async () => done >= JOBS && Number((await sql(url, `SELECT count(*) AS n FROM ${schema}._private_jobs`))[0]!.n) === 0, 300_000, 20);
    const end = Date.now();
    await runner.stop();
    return { config: label, concurrency: options.concurrency, jobs: done, jobsPerSecond: rate(done, end - first), wallMs: end - t0, lastJobAt: last - t0 };
  } finally {
    await utils.release();
    await sql(url, `DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  }
}

async function pgBoss(label: string, options: { workers: number; batchSize: number }) {
  const { default: PgBoss } = await import("pg-boss");
  const schema = freshSchema("bench_boss");
  const boss = new PgBoss({ connectionString: url, schema, supervise: false, schedule: false });
  boss.on("error", () => {});
  await boss.start();
  try {
    await boss.createQueue("noop");
    for (let i = 0; i < JOBS; i += 1000) {
      await boss.insert(Array.from({ length: Math.min(1000, JOBS - i) }, () => ({ name: "noop", data: {} })));
    }
    let first = 0;
    let done = 0;
    const t0 = Date.now();
    for (let w = 0; w < options.workers; w++) {
      await boss.work("noop", { batchSize: options.batchSize, pollingIntervalSeconds: 0.5 }, async (jobs) => {
        first ||= Date.now();
        done += jobs.length;
      });
    }
    await until("pg-boss to drain", async () => done >= JOBS && (await boss.getQueueSize("noop", { before: "completed" })) === 0, 600_000, 20);
    const end = Date.now();
    return { config: label, workers: options.workers, batchSize: options.batchSize, jobs: done, jobsPerSecond: rate(done, end - first), wallMs: end - t0 };
  } finally {
    await boss.stop({ graceful: false, wait: true }).catch(() => {});
    await sql(url, `DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  }
}

const idemRuns = [];
for (const concurrency of (process.env.BENCH_CONCURRENCY ?? "16,64").split(",").map(Number)) {
  for (const workers of (process.env.BENCH_WORKERS ?? "1,2,4").split(",").map(Number)) idemRuns.push(await idem(workers, concurrency));
}
if (process.env.BENCH_IDEM_ONLY) {
  console.log(JSON.stringify({ bench: NAME, jobs: JOBS, idem: idemRuns }));
  process.exit(0);
}
const graphileRuns = [
  await graphile("default", { concurrency: 1 }),
  await graphile("concurrency 10", { concurrency: 10 }),
  await graphile("batched", { concurrency: 24, preset: { localQueue: { size: 500 }, completeJobBatchDelay: 0, failJobBatchDelay: 0 } }),
];
const bossRuns = [
  await pgBoss("batch 100", { workers: 4, batchSize: 100 }),
  await pgBoss("batch 500", { workers: 4, batchSize: 500 }),
];
const best = Math.max(...idemRuns.map((r) => r.jobsPerSecond));
console.log(JSON.stringify({
  bench: NAME,
  jobs: JOBS,
  idem: idemRuns,
  graphileWorker: graphileRuns,
  pgBoss: bossRuns,
  ratios: {
    idemBestToGraphileDefault: +(best / graphileRuns[0]!.jobsPerSecond).toFixed(2),
    idemBestToGraphileBatched: +(best / graphileRuns[2]!.jobsPerSecond).toFixed(2),
  },
}));
process.exit(0);
