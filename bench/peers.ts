/**
 * idem against the Node job queues, side by side in one process tree, interleaved round by round
 * (the order rotates), every raw figure printed as it is measured, ratios at the end.
 *
 * Servers: a PostgreSQL this benchmark starts with fsync and synchronous_commit on (the server
 * as users run it), and Debian's redis-server for BullMQ (skipped, with a message, when missing),
 * each on a free 127.0.0.1 port, stopped by pid at the end.
 *
 * Shapes (BENCH_SHAPES, default ceiling,throughput,chain,big; BENCH_JOBS, default 20,000;
 * BENCH_ROUNDS, default 3; BENCH_BIG, default 1000,20000; BENCH_ONLY, a comma-separated list of
 * system names to run alone, for example "idem sqlite"; BENCH_WORKER_NODE_ARGS, node's options for
 * the idem processes only, for example "--cpu-prof --cpu-prof-dir=/tmp/prof"; BENCH_PREFETCH, the
 * idem workers' `prefetch` (attempts claimed ahead of free slots), default unset: idem runs at its
 * own default, "auto", as a user's project would; graphile-worker's batched configuration fetches
 * 500 ahead):
 *   throughput  no-op units at concurrency 10 in one worker: for idem 2,000 runs x 10 independent
 *               tasks enqueued in one transaction (as bench/pg/throughput.ts), drained by one
 *               `idem worker` process on SQLite and one on PostgreSQL; each unit is claimed with
 *               a lease, run in a task host, and recorded (attempt row, state, log file, run end).
 *               BullMQ (defaults, concurrency 10), graphile-worker (concurrency 10, default and
 *               batched: local queue 500, batched completion) and pg-boss (4 workers, batch 500,
 *               its shortest polling) drain the same number of jobs. Jobs/s from the first start
 *               to the last end. The idem worker's peak RSS (VmHWM) is read before it stops. CPU
 *               per job over the round (from /proc): idem's worker and its task hosts apart,
 *               BullMQ's process (its worker runs there) and its Redis server apart: the machine
 *               is CPU-bound, so what a job costs in all processes is what sets the rate.
 *   chain       200 tasks, each started once its parent is recorded; a hop is parent end ->
 *               child start, measured in the tasks. idem: two worker processes (across processes);
 *               BullMQ and graphile-worker: the handler enqueues the next job as its last act.
 *               pg-boss is left out: it polls (0.5 s at least), so a hop is a poll.
 *   sqlite ceiling  small write transactions (BEGIN IMMEDIATE, one UPDATE, COMMIT) a second on
 *               a WAL file with synchronous=NORMAL (the store's settings) on the same disk.
 *   one big run one run of 1,000 and one of 20,000 independent no-op tasks on SQLite, one worker
 *               process: per-task cost of each, and their ratio (linear would be 1.0).
 *   instrumented  the throughput shape for idem again, the worker instrumented as an ops team
 *               runs it: `--health-port` with its /metrics scraped every second by the benchmark,
 *               and OpenTelemetry traces exported to an OTLP/HTTP receiver on 127.0.0.1 (the
 *               benchmark's, answering 200); its rounds rotate with the plain ones, and the ratio
 *               instrumented / plain is what the instrumentation costs (issue 29: at most 5%).
 *               BENCH_INSTRUMENT, default "metrics,traces": one of them alone tells them apart.
 *   history     (not in the default list: BENCH_SHAPES=history) idem alone, SQLite and PostgreSQL:
 *               the throughput and chain shapes on a store holding BENCH_HISTORY_RUNS (default
 *               100,000) finished runs of ten daily pipelines, each with its five task instances
 *               and their attempts (one run in fifty failed), seeded by direct SQL, against the
 *               same project with an empty store, interleaved; an `idem scheduler` runs beside the
 *               workers in both (its ticks count). Ratios seeded / empty.
 * Usage: npm run bench -- peers
 */
import { spawnSync } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { loadavg } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import Database from "better-sqlite3";
import pg from "pg";
import { freshSchema, percentile, project, repo, startIdem, until, withSchema } from "./pg/lib/cluster.ts";
import { cpuMsOf, descendantPids, peakRssMb, startPostgres, startRedis, type Server } from "./lib/servers.ts";
import { openWalDatabase } from "../src/sqlite/open-wal.ts";
import { notifyWork } from "../src/engine/worker/wakeup.ts";
import { PostgresStore } from "../src/store/postgres/postgres-store.ts";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.ts";
import type { Store } from "../src/store/port.ts";
import { saveVersion, taskInstancesOf } from "../src/engine/records/pipeline-records.ts";
import type { Pipeline } from "../src/core/pipeline/types.ts";

const NAME = "peers";
const JOBS = Number(process.env.BENCH_JOBS ?? 20_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const TASKS_PER_RUN = 10;
const RUNS = Math.ceil(JOBS / TASKS_PER_RUN);
const CONCURRENCY = 10;
const CHAIN = 200;
const BIG = (process.env.BENCH_BIG ?? "1000,20000").split(",").map(Number);
const ONLY = process.env.BENCH_ONLY ? process.env.BENCH_ONLY.split(",") : null;
const PREFETCH = process.env.BENCH_PREFETCH === undefined ? "auto (the default)" : Number(process.env.BENCH_PREFETCH);
const INSTRUMENT = new Set((process.env.BENCH_INSTRUMENT ?? "metrics,traces").split(","));
const SHAPES = new Set((process.env.BENCH_SHAPES ?? "ceiling,throughput,instrumented,chain,big").split(","));

const load = () => loadavg().map((l) => +l.toFixed(2));
const rate = (jobs: number, ms: number) => Math.round(jobs / (ms / 1000));
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2) : NaN;
};
const emit = (figure: Record<string, unknown>) => console.log(JSON.stringify({ bench: NAME, ...figure, load: load() }));

// The workers run dist/ (bin/idem.js): compile what this checkout says first.
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
if (spawnSync(process.execPath, [tsc, "-p", "tsconfig.json"], { cwd: repo, stdio: "inherit" }).status !== 0) {
  console.log(JSON.stringify({ bench: NAME, error: "npm run build failed" }));
  process.exit(1);
}

const pipelines = `import { pipeline } from "idem";
import { performance } from "node:perf_hooks";
const now = () => performance.timeOrigin + performance.now();
const noopTasks = {};
for (let i = 0; i < ${TASKS_PER_RUN}; i++) noopTasks["t" + i] = { run: () => {} };
// No cap of its own: the worker's concurrency is what is measured.
export const noop = pipeline("noop", { maxActiveTasks: 1000000 }, noopTasks);
const chainTasks = {};
for (let i = 0; i < ${CHAIN}; i++) chainTasks["t" + i] = { after: i ? ["t" + (i - 1)] : [], run: () => { const s = now(); return { s, e: now() }; } };
export const chain = pipeline("chain", {}, chainTasks);
`;

// Only in the big run's project: 20,000 task definitions would weigh on every other figure.
const widePipeline = `import { pipeline } from "idem";
const wideTasks = {};
for (let i = 0; i < ${Math.max(...BIG)}; i++) wideTasks["t" + i] = { run: () => {} };
export const wide = pipeline("wide", { maxActiveTasks: 1000000 }, wideTasks);
`;

type Kind = "sqlite" | "postgres";

/** Every idem worker process running now: stopped before the servers, whatever ends the benchmark. */
const liveWorkers = new Set<ReturnType<typeof startIdem>>();

/** A fresh idem project (a SQLite file, or a fresh schema on the benchmark's server). */
async function idemProject(kind: Kind, pgUrl: string | null, pipelineFile = pipelines) {
  const schema = freshSchema("bench_idem");
  const stateUrl = kind === "postgres" ? withSchema(pgUrl!, schema) : null;
  const { dir, cleanup } = project({
    "idem.config.ts": `import { defineConfig } from "idem";\nexport default defineConfig({ ${stateUrl ? `state: ${JSON.stringify(stateUrl)}, ` : ""}concurrency: ${CONCURRENCY}${typeof PREFETCH === "number" ? `, prefetch: ${PREFETCH}` : ""} });\n`,
    "pipelines/bench.ts": pipelineFile,
  });
  const store: Store = stateUrl ? new PostgresStore({ connectionString: stateUrl, poolSize: 2 }) : new SqliteStore(join(dir, ".idem/state.db"));
  await store.migrate();
  const client = stateUrl ? new pg.Client({ connectionString: pgUrl!, options: `-c search_path=${schema}` }) : null;
  client?.on("error", () => {});
  await client?.connect();
  const db = stateUrl ? null : openWalDatabase(join(dir, ".idem/state.db"));
  /** One statement's rows, on whichever store this is (the benchmark's own reads and bulk writes). */
  const query = async (text: string, params: unknown[] = []): Promise<Record<string, any>[]> => {
    if (client) return (await client.query(text, params)).rows;
    const sqliteText = text.replace(/\$\d+/g, "?").replace(/::int\b/g, "");
    const statement = db!.prepare(sqliteText);
    return statement.reader ? (statement.all(...params) as Record<string, any>[]) : (statement.run(...params), []);
  };
  const workers: ReturnType<typeof startIdem>[] = [];
  return {
    kind, dir, store, query,
    async startWorkers(n: number, args: string[] = []) {
      for (let i = 0; i < n; i++) {
        const worker = startIdem(dir, "worker", ...args);
        workers.push(worker);
        liveWorkers.add(worker);
      }
      await until("workers up", async () => Number((await query("SELECT count(*) AS n FROM workers"))[0]!.n) === workers.length, 120_000, 50);
      await new Promise((r) => setTimeout(r, 500)); // past the first idle polls
      return workers;
    },
    /** Runs and their task instances, all at once, as a catch-up or a big fan-out makes them. */
    async enqueue(pipelineId: string, runs: number, tasksPerRun: number, runPrefix = pipelineId) {
      const t0 = Date.now();
      const first = runPrefix === pipelineId ? 1 : 1_000_001; // a warm-up run has intervals of its own
      if (client) {
        await client.query("BEGIN");
        await client.query(
          `INSERT INTO runs (run_id, pipeline_id, interval_start, interval_end, business_date, state, trigger_kind, graph_version, params, created_at)
           SELECT $4 || '@' || i, $3, i, i + 1, '2026-01-01', 'queued', 'manual', 'bench', '{}', $1 FROM generate_series($5::int, $5::int + $2::int - 1) AS i`,
          [t0, runs, pipelineId, runPrefix, first],
        );
        await client.query(
          `INSERT INTO task_instances (run_id, task_id, state, max_tries, trigger_rule, queued_at)
           SELECT $4 || '@' || i, 't' || j, 'queued', 1, 'all_success', $1 FROM generate_series($5::int, $5::int + $2::int - 1) AS i, generate_series(0, $3::int - 1) AS j`,
          [t0, runs, tasksPerRun, runPrefix, first],
        );
        await client.query(`SELECT pg_notify($1, '')`, [`idem_work_${schema}`]);
        await client.query("COMMIT");
        await client.query("ANALYZE runs, task_instances");
      } else {
        db!.transaction(() => {
          db!.prepare(
            `INSERT INTO runs (run_id, pipeline_id, interval_start, interval_end, business_date, state, trigger_kind, graph_version, params, created_at)
             WITH RECURSIVE n(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM n WHERE i < ?)
             SELECT ? || '@' || i, ?, i, i + 1, '2026-01-01', 'queued', 'manual', 'bench', '{}', ? FROM n`,
          ).run(first, first + runs - 1, runPrefix, pipelineId, t0);
          db!.prepare(
            `INSERT INTO task_instances (run_id, task_id, state, max_tries, trigger_rule, queued_at)
             WITH RECURSIVE n(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM n WHERE i < ?), m(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM m WHERE j < ? - 1)
             SELECT ? || '@' || i, 't' || j, 'queued', 1, 'all_success', ? FROM n, m`,
          ).run(first, first + runs - 1, tasksPerRun, runPrefix, t0);
        })();
        notifyWork(join(dir, ".idem"));
      }
      return t0;
    },
    /** Jobs/s between the first attempt's start and the last one's end. */
    async span(runPrefix: string) {
      const [row] = await query(
        `SELECT min(started_at) AS s, max(ended_at) AS e, count(*) AS n FROM attempts WHERE run_id LIKE $1 AND ended_at IS NOT NULL`,
        [`${runPrefix}@%`],
      );
      return { jobs: Number(row!.n), ms: Number(row!.e) - Number(row!.s) };
    },
    async close() {
      await Promise.all(workers.map(async (w) => {
        await w.stop();
        liveWorkers.delete(w);
      }));
      await client?.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await client?.end();
      db?.close();
      await store.close();
      cleanup();
    },
  };
}

/** The worker's peak RSS, and the largest of its task hosts', in MB. */
function memoryOf(workerPid: number) {
  const hosts = descendantPids(workerPid).map(peakRssMb).filter((m): m is number => m !== null);
  return { workerPeakRssMb: peakRssMb(workerPid), largestHostPeakRssMb: hosts.length ? Math.max(...hosts) : null };
}

/** An OTLP/HTTP receiver on 127.0.0.1 that takes every export and counts it. */
async function otlpReceiver() {
  let exports = 0;
  let bytes = 0;
  const server = createServer((request, response) => {
    request.on("data", (chunk: Buffer) => (bytes += chunk.length));
    request.on("end", () => {
      exports++;
      response.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, counts: () => ({ exports, bytes }), close: () => new Promise<void>((r) => server.close(() => r())) };
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

/** The worker's /metrics, scraped every second until stopped, as Prometheus would (more often than its default). */
function scrapeEverySecond(port: number) {
  let scrapes = 0;
  let failures = 0;
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    fetch(`http://127.0.0.1:${port}/metrics`)
      .then(async (r) => {
        await r.text();
        if (r.status === 200) scrapes++;
        else failures++;
      })
      .catch(() => failures++)
      .finally(() => (busy = false));
  }, 1_000);
  return { stop: () => (clearInterval(timer), { scrapes, scrapeFailures: failures }) };
}

async function idemThroughput(kind: Kind, pgUrl: string | null, instrumented = false) {
  const p = await idemProject(kind, pgUrl);
  const receiver = instrumented && INSTRUMENT.has("traces") ? await otlpReceiver() : null;
  const port = instrumented && INSTRUMENT.has("metrics") ? await freePort() : null;
  try {
    // Only the instrumented worker sees the endpoint: the variable is set around its start.
    if (receiver) process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.url;
    const [worker] = await p.startWorkers(1, port === null ? [] : ["--health-port", String(port)]);
    delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
    const scraper = port === null ? null : scrapeEverySecond(port);
    const before = cpuOfTree(worker!.pid);
    const t0 = await p.enqueue("noop", RUNS, TASKS_PER_RUN);
    await until("all noop runs", async () => Number((await p.query("SELECT count(*) AS n FROM runs WHERE state = 'success'"))[0]!.n) === RUNS, 600_000, 100);
    const wallMs = Date.now() - t0;
    const after = cpuOfTree(worker!.pid);
    const { jobs, ms } = await p.span("noop");
    const scraped = scraper?.stop();
    return {
      jobs, jobsPerSecond: rate(jobs, ms), wallMs, ...memoryOf(worker!.pid),
      workerCpuUsPerJob: perJob(after.own - before.own, jobs), hostsCpuUsPerJob: perJob(after.below - before.below, jobs),
      ...(scraped ?? {}), ...(receiver ? { otlpExports: receiver.counts().exports, otlpBytes: receiver.counts().bytes } : {}),
    };
  } finally {
    delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
    await p.close();
    await receiver?.close();
  }
}

async function idemChain(kind: Kind, pgUrl: string | null) {
  const p = await idemProject(kind, pgUrl);
  try {
    await p.startWorkers(2);
    return await chainHops(p);
  } finally {
    await p.close();
  }
}

/** Two 200-task chains on the project's running workers (the first warms up): the second's hops. */
async function chainHops(p: Awaited<ReturnType<typeof idemProject>>) {
  const { chain } = (await import(pathToFileURL(join(p.dir, "pipelines/bench.ts")).href)) as { chain: Pipeline };
  const hops: number[] = [];
  for (const [round, day] of ["2026-01-01", "2026-01-02"].entries()) {
    const start = Date.parse(`${day}T00:00:00Z`);
    await saveVersion(p.store, chain, Date.now(), "bench");
    await p.store.createRunIfAbsent({
      runId: `chain@${day}`, pipelineId: "chain", intervalStart: start, intervalEnd: start + 86_400_000, businessDate: day,
      graphVersion: chain.version, trigger: "manual", triggeredBy: "bench", reason: null, params: {}, tasks: taskInstancesOf(chain), createdAt: Date.now(),
    });
    await until("the chain", async () => (await p.store.getRun(`chain@${day}`))!.state === "success", 300_000, 20);
    if (round === 0) continue; // warm-up: task hosts started, statements prepared
    const byTask = new Map((await p.store.listAttempts(`chain@${day}`)).map((r) => [r.taskId, r.summary as unknown as { s: number; e: number }]));
    for (let i = 1; i < CHAIN; i++) hops.push(byTask.get(`t${i}`)!.s - byTask.get(`t${i - 1}`)!.e);
  }
  return hopFigures(hops);
}

async function idemBigRun(tasks: number) {
  const p = await idemProject("sqlite", null, widePipeline);
  try {
    const [worker] = await p.startWorkers(1);
    // Warm-up: the task hosts start (each imports the 20,000-task file) before the clock runs.
    await p.enqueue("wide", 1, CONCURRENCY * 3, "warmup");
    await until("the warm-up run", async () => Number((await p.query("SELECT count(*) AS n FROM runs WHERE state = 'success'"))[0]!.n) === 1, 240_000, 100);
    await p.enqueue("wide", 1, tasks);
    let complete = true;
    await until(`one run of ${tasks}`, async () => Number((await p.query("SELECT count(*) AS n FROM runs WHERE state = 'success'"))[0]!.n) === 2, 240_000, 200)
      .catch(() => (complete = false)); // bounded: past 4 minutes, the rate so far
    const { jobs, ms } = await p.span("wide");
    return { tasks, complete, tasksDone: jobs, tasksPerSecond: rate(jobs, ms), usPerTask: Math.round((ms * 1000) / jobs), ...memoryOf(worker!.pid) };
  } finally {
    await p.close();
  }
}

// --- history: a store holding 100,000 finished runs against an empty one ----------------------

const HISTORY_RUNS = Number(process.env.BENCH_HISTORY_RUNS ?? 100_000);
const HISTORY_PIPELINES = 10;
const HISTORY_TASKS = 5;
const DAY_MS = 86_400_000;
const HISTORY_FIRST_DAY = Date.parse("1999-01-01T00:00:00Z");
const HISTORY_DAYS = Math.ceil(HISTORY_RUNS / HISTORY_PIPELINES);
const HISTORY_END = HISTORY_FIRST_DAY + HISTORY_DAYS * DAY_MS;

/**
 * The throughput project plus ten daily pipelines of five chained tasks. They own no interval
 * past the history's last day, and their schedule cursors are put there in both stores, so the
 * scheduler has nothing to create in either: what it does per tick is what the history costs it.
 */
const historyPipelineFile = `${pipelines}
const histTasks = {};
for (let i = 0; i < ${HISTORY_TASKS}; i++) histTasks["t" + i] = { after: i ? ["t" + (i - 1)] : [], run: () => {} };
${Array.from({ length: HISTORY_PIPELINES }, (_, i) =>
  `export const hist${i} = pipeline("hist${i}", { schedule: "0 0 * * *", start: "1999-01-01", end: "${new Date(HISTORY_END - DAY_MS).toISOString().slice(0, 10)}" }, histTasks);`).join("\n")}
`;

/**
 * Finished runs as years of a daily schedule leave them: run i is pipeline hist(i mod 10)'s day
 * i / 10 from 1999-01-01, every task instance succeeded after one attempt, except in one run of
 * fifty, whose last task failed. One statement per table, so 100,000 runs take seconds.
 */
async function seedHistory(p: Awaited<ReturnType<typeof idemProject>>, runs: number) {
  const t0 = Date.now();
  const last = HISTORY_TASKS - 1;
  const runColumns = "run_id, pipeline_id, interval_start, interval_end, business_date, state, trigger_kind, graph_version, params, created_at, started_at, ended_at";
  const taskColumns = "run_id, task_id, state, try_number, max_tries, trigger_rule, queued_at, started_at, ended_at";
  const attemptColumns = "run_id, task_id, try_number, state, worker_id, pid, started_at, ended_at, error_class, error_message, log_path";
  const runValues = (day: string) => `pipeline_id || '@' || ${day}, pipeline_id, s, s + ${DAY_MS}, ${day}, CASE WHEN i % 50 = 49 THEN 'failed' ELSE 'success' END,
    'schedule', 'hist', '{}', s + ${DAY_MS + 60_000}, s + ${DAY_MS + 61_000}, s + ${DAY_MS + 120_000}`;
  const taskValues = `r.run_id, 't' || j, CASE WHEN r.state = 'failed' AND j = ${last} THEN 'failed' ELSE 'success' END, 1, 1, 'all_success',
    r.started_at + j * 10000, r.started_at + j * 10000, r.started_at + j * 10000 + 9000`;
  const attemptValues = `run_id, task_id, 1, state, 'bench-history', 1, started_at, ended_at,
    CASE WHEN state = 'failed' THEN 'TaskFailed' END, CASE WHEN state = 'failed' THEN 'the source was late' END, 'logs/' || run_id || '/' || task_id || '/1.log'`;
  const statements = p.kind === "postgres" ? [
    `INSERT INTO runs (${runColumns}) SELECT ${runValues("to_char(to_timestamp(s / 1000) AT TIME ZONE 'UTC', 'YYYY-MM-DD')")}
       FROM (SELECT i, 'hist' || (i % ${HISTORY_PIPELINES}) AS pipeline_id, ${HISTORY_FIRST_DAY}::bigint + (i / ${HISTORY_PIPELINES})::bigint * ${DAY_MS} AS s
             FROM generate_series(0, ${runs - 1}) AS i) AS r`,
    `INSERT INTO task_instances (${taskColumns}) SELECT ${taskValues} FROM runs r, generate_series(0, ${last}) AS j WHERE r.graph_version = 'hist'`,
    `INSERT INTO attempts (${attemptColumns}) SELECT ${attemptValues} FROM task_instances WHERE run_id LIKE 'hist%'`,
  ] : [
    `INSERT INTO runs (${runColumns})
       WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${runs - 1}),
       r AS (SELECT i, 'hist' || (i % ${HISTORY_PIPELINES}) AS pipeline_id, ${HISTORY_FIRST_DAY} + (i / ${HISTORY_PIPELINES}) * ${DAY_MS} AS s FROM n)
       SELECT ${runValues("date(s / 1000, 'unixepoch')")} FROM r`,
    `INSERT INTO task_instances (${taskColumns})
       WITH RECURSIVE m(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM m WHERE j < ${last})
       SELECT ${taskValues} FROM runs r, m WHERE r.graph_version = 'hist'`,
    `INSERT INTO attempts (${attemptColumns}) SELECT ${attemptValues} FROM task_instances WHERE run_id LIKE 'hist%'`,
  ];
  await p.query("BEGIN");
  for (const statement of statements) await p.query(statement);
  await p.query("COMMIT");
  // PostgreSQL's autovacuum analyses tables after such a load; the SQLite store never runs
  // ANALYZE, so its planner sees the history as users' stores have it: without statistics.
  if (p.kind === "postgres") await p.query("ANALYZE runs, task_instances, attempts");
  return Date.now() - t0;
}

/** The history pipelines' schedule cursors at the end of their history: nothing is due. */
async function historyCursors(p: Awaited<ReturnType<typeof idemProject>>) {
  for (let i = 0; i < HISTORY_PIPELINES; i++) {
    await p.query(`INSERT INTO pipelines (pipeline_id, schedule_cursor, created_at) VALUES ($1, $2, $3)`, [`hist${i}`, HISTORY_END, Date.now()]);
  }
}

/**
 * CPU time (ms) of a process and, apart, of the processes below it that are alive now (a worker's
 * task hosts). Taken before and after a round, the difference is what the round cost: on this
 * CPU-bound machine, throughput is the cores divided by the CPU a task costs in all processes.
 */
function cpuOfTree(pid: number): { own: number; below: number } {
  return { own: cpuMsOf(pid) ?? 0, below: descendantPids(pid).reduce((sum, child) => sum + (cpuMsOf(child) ?? 0), 0) };
}

const perJob = (cpuMs: number, jobs: number) => (jobs > 0 ? Math.round((cpuMs * 1000) / jobs) : null);

/**
 * Throughput (one worker), then chain hops (a second worker joins), an `idem scheduler` beside
 * them. The worker's and the scheduler's CPU time over the throughput part say where history
 * costs, whatever the machine's load does to the rates.
 */
async function idemHistory(kind: Kind, pgUrl: string | null, seeded: boolean) {
  const p = await idemProject(kind, pgUrl, historyPipelineFile);
  let scheduler: ReturnType<typeof startIdem> | null = null;
  try {
    await historyCursors(p);
    const seedMs = seeded ? await seedHistory(p, HISTORY_RUNS) : 0;
    scheduler = startIdem(p.dir, "scheduler");
    liveWorkers.add(scheduler);
    const [worker] = await p.startWorkers(1);
    const finished = async () => Number((await p.query("SELECT count(*) AS n FROM runs WHERE pipeline_id = 'noop' AND state = 'success'"))[0]!.n);
    const t0 = await p.enqueue("noop", RUNS, TASKS_PER_RUN);
    await until("all noop runs", async () => (await finished()) === RUNS, 600_000, 100);
    const wallMs = Date.now() - t0;
    const { jobs, ms } = await p.span("noop");
    const memory = memoryOf(worker!.pid);
    const [workerCpuMs, schedulerCpuMs] = [cpuMsOf(worker!.pid), cpuMsOf(scheduler.pid)];
    await p.startWorkers(1);
    const chain = await chainHops(p);
    const historyRuns = Number((await p.query("SELECT count(*) AS n FROM runs WHERE graph_version = 'hist'"))[0]!.n);
    return {
      store: seeded ? "history" : "empty", historyRuns, seedMs, jobs, jobsPerSecond: rate(jobs, ms), wallMs, workerCpuMs, schedulerCpuMs,
      chainP50Ms: chain.p50Ms, chainP90Ms: chain.p90Ms, chainP99Ms: chain.p99Ms, ...memory,
    };
  } finally {
    if (scheduler) {
      await scheduler.stop();
      liveWorkers.delete(scheduler);
    }
    await p.close();
  }
}

function hopFigures(hops: number[]) {
  const sorted = [...hops].sort((a, b) => a - b);
  return { hops: sorted.length, p50Ms: percentile(sorted, 0.5), p90Ms: percentile(sorted, 0.9), p99Ms: percentile(sorted, 0.99) };
}

const now = () => performance.timeOrigin + performance.now();

async function bullmqThroughput(redis: Server) {
  const { Queue, Worker } = await import("bullmq");
  const connection = { host: "127.0.0.1", port: Number(new URL(redis.url).port) };
  const name = freshSchema("noop");
  const queue = new Queue(name, { connection });
  try {
    for (let i = 0; i < JOBS; i += 1000) await queue.addBulk(Array.from({ length: Math.min(1000, JOBS - i) }, () => ({ name: "noop", data: {} })));
    let first = 0;
    let last = 0;
    let done = 0;
    const t0 = Date.now();
    const [ownBefore, redisBefore] = [process.cpuUsage(), cpuMsOf(redis.pid) ?? 0];
    const worker = new Worker(name, async () => {
      first ||= Date.now();
      done++;
      last = Date.now();
    }, { connection, concurrency: CONCURRENCY });
    await until("BullMQ to drain", async () => done >= JOBS && ((await queue.getJobCounts("completed")).completed ?? 0) >= JOBS, 300_000, 20);
    const own = process.cpuUsage(ownBefore);
    const redisCpuMs = (cpuMsOf(redis.pid) ?? 0) - redisBefore;
    await worker.close();
    return {
      jobs: done, jobsPerSecond: rate(done, last - first), wallMs: Date.now() - t0,
      workerCpuUsPerJob: perJob((own.user + own.system) / 1000, done), redisCpuUsPerJob: perJob(redisCpuMs, done),
    };
  } finally {
    await queue.obliterate({ force: true }).catch(() => {});
    await queue.close();
  }
}

async function bullmqChain(redis: Server) {
  const { Queue, Worker } = await import("bullmq");
  const connection = { host: "127.0.0.1", port: Number(new URL(redis.url).port) };
  const name = freshSchema("chain");
  const queue = new Queue(name, { connection });
  const times = new Map<string, { s: number; e: number }>();
  const worker = new Worker(name, async (job) => {
    const s = now();
    const { chain, i } = job.data as { chain: number; i: number };
    const e = now();
    times.set(`${chain}:${i}`, { s, e });
    if (i + 1 < CHAIN) await queue.add("hop", { chain, i: i + 1 });
  }, { connection, concurrency: CONCURRENCY });
  try {
    for (const chain of [0, 1]) {
      await queue.add("hop", { chain, i: 0 });
      await until("the BullMQ chain", async () => times.has(`${chain}:${CHAIN - 1}`), 120_000, 10);
    }
    const hops: number[] = [];
    for (let i = 1; i < CHAIN; i++) hops.push(times.get(`1:${i}`)!.s - times.get(`1:${i - 1}`)!.e);
    return hopFigures(hops);
  } finally {
    await worker.close();
    await queue.obliterate({ force: true }).catch(() => {});
    await queue.close();
  }
}

const GRAPHILE = {
  default: { concurrency: CONCURRENCY },
  batched: { concurrency: CONCURRENCY, preset: { localQueue: { size: 500 }, completeJobBatchDelay: 0, failJobBatchDelay: 0 } },
} as const;

async function graphileThroughput(pgUrl: string, config: keyof typeof GRAPHILE) {
  const { run, makeWorkerUtils, Logger } = await import("graphile-worker");
  const options = GRAPHILE[config] as { concurrency: number; preset?: Record<string, unknown> };
  const schema = freshSchema("bench_gw");
  const logger = new Logger(() => () => {});
  const utils = await makeWorkerUtils({ connectionString: pgUrl, schema, logger });
  try {
    await utils.migrate();
    for (let i = 0; i < JOBS; i += 1000) await utils.addJobs(Array.from({ length: Math.min(1000, JOBS - i) }, () => ({ identifier: "noop", payload: {} })));
    let first = 0;
    let last = 0;
    let done = 0;
    const t0 = Date.now();
    const runner = await run({
      connectionString: pgUrl, schema, logger, noHandleSignals: true, concurrency: options.concurrency,
      taskList: { noop: async () => { first ||= Date.now(); done++; last = Date.now(); } },
      preset: options.preset ? { worker: options.preset } : undefined,
    });
    await until("graphile-worker to drain", async () => done >= JOBS && Number((await utils.withPgClient((c) => c.query(`SELECT count(*) AS n FROM ${schema}._private_jobs`))).rows[0].n) === 0, 300_000, 20);
    await runner.stop();
    return { jobs: done, jobsPerSecond: rate(done, last - first), wallMs: Date.now() - t0 };
  } finally {
    await utils.withPgClient((c) => c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`));
    await utils.release();
  }
}

async function graphileChain(pgUrl: string) {
  const { run, makeWorkerUtils, Logger } = await import("graphile-worker");
  const schema = freshSchema("bench_gw");
  const logger = new Logger(() => () => {});
  const utils = await makeWorkerUtils({ connectionString: pgUrl, schema, logger });
  const times = new Map<string, { s: number; e: number }>();
  try {
    await utils.migrate();
    const runner = await run({
      connectionString: pgUrl, schema, logger, noHandleSignals: true, concurrency: CONCURRENCY,
      taskList: {
        hop: async (payload, helpers) => {
          const s = now();
          const { chain, i } = payload as { chain: number; i: number };
          const e = now();
          times.set(`${chain}:${i}`, { s, e });
          if (i + 1 < CHAIN) await helpers.addJob("hop", { chain, i: i + 1 });
        },
      },
    });
    for (const chain of [0, 1]) {
      await utils.addJob("hop", { chain, i: 0 });
      await until("the graphile-worker chain", async () => times.has(`${chain}:${CHAIN - 1}`), 120_000, 10);
    }
    await runner.stop();
    const hops: number[] = [];
    for (let i = 1; i < CHAIN; i++) hops.push(times.get(`1:${i}`)!.s - times.get(`1:${i - 1}`)!.e);
    return hopFigures(hops);
  } finally {
    await utils.withPgClient((c) => c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`));
    await utils.release();
  }
}

async function pgBossThroughput(pgUrl: string) {
  const { default: PgBoss } = await import("pg-boss");
  const schema = freshSchema("bench_boss");
  const boss = new PgBoss({ connectionString: pgUrl, schema, supervise: false, schedule: false });
  boss.on("error", () => {});
  await boss.start();
  try {
    await boss.createQueue("noop");
    for (let i = 0; i < JOBS; i += 1000) await boss.insert(Array.from({ length: Math.min(1000, JOBS - i) }, () => ({ name: "noop", data: {} })));
    let first = 0;
    let last = 0;
    let done = 0;
    const t0 = Date.now();
    for (let w = 0; w < 4; w++) {
      await boss.work("noop", { batchSize: 500, pollingIntervalSeconds: 0.5 }, async (jobs) => {
        first ||= Date.now();
        done += jobs.length;
        last = Date.now();
      });
    }
    await until("pg-boss to drain", async () => done >= JOBS && (await boss.getQueueSize("noop", { before: "completed" })) === 0, 300_000, 20);
    return { jobs: done, jobsPerSecond: rate(done, last - first), wallMs: Date.now() - t0, config: "4 workers, batch 500, 0.5 s polling" };
  } finally {
    await boss.stop({ graceful: false, wait: true }).catch(() => {});
    const client = new pg.Client({ connectionString: pgUrl });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await client.end();
  }
}

/** Small write transactions a second on a WAL file in the projects' folder (the same disk). */
function sqliteCeiling() {
  const { dir, cleanup } = project({});
  const db = openWalDatabase(join(dir, "ceiling.db"));
  try {
    db.pragma("synchronous = NORMAL");
    db.exec("CREATE TABLE c (id INTEGER PRIMARY KEY, n INTEGER NOT NULL); INSERT INTO c VALUES (1, 0)");
    const bump = db.prepare("UPDATE c SET n = n + 1 WHERE id = 1");
    const one = db.transaction(() => bump.run());
    const t0 = performance.now();
    let n = 0;
    while (performance.now() - t0 < 3_000) {
      one.immediate();
      n++;
    }
    return { transactionsPerSecond: Math.round(n / ((performance.now() - t0) / 1000)) };
  } finally {
    db.close();
    cleanup();
  }
}

// --- the run ---------------------------------------------------------------------------------

const started = new Date().toISOString();
const servers: Server[] = [];
const stopAll = async () => {
  await Promise.all([...liveWorkers].map((w) => w.stop()));
  liveWorkers.clear();
  for (const s of servers.splice(0).reverse()) await s.stop();
};
process.once("SIGINT", () => void stopAll().then(() => process.exit(130)));
process.once("SIGTERM", () => void stopAll().then(() => process.exit(143)));
// Bounded in time: past this, stop what was started and say so.
setTimeout(() => {
  emit({ error: "did not finish within 19 minutes; the figures above stand, the summary is missing" });
  void stopAll().then(() => process.exit(1));
}, 19 * 60_000).unref();

const figures: Record<string, Record<string, number>[]> = {};
const keep = (system: string, shape: string, figure: Record<string, unknown>) => {
  emit({ system, shape, ...figure });
  (figures[`${system} ${shape}`] ??= []).push(figure as Record<string, number>);
};

try {
  const postgres = await startPostgres();
  const redis = await startRedis();
  let pgUrl: string | null = null;
  if ("skipped" in postgres) emit({ skipped: `PostgreSQL: ${postgres.skipped}` });
  else {
    servers.push(postgres);
    pgUrl = postgres.url;
  }
  if ("skipped" in redis) emit({ skipped: redis.skipped });
  else servers.push(redis);
  emit({ started, shapes: [...SHAPES], instrument: [...INSTRUMENT], jobs: JOBS, rounds: ROUNDS, concurrency: CONCURRENCY, prefetch: PREFETCH, node: process.version, postgres: pgUrl ? "fsync on, synchronous_commit on" : null });

  const instrumentedSystems: [string, () => Promise<Record<string, unknown>>][] = SHAPES.has("instrumented") ? [
    ["idem sqlite instrumented", () => idemThroughput("sqlite", null, true)],
    ...(pgUrl ? ([["idem postgres instrumented", () => idemThroughput("postgres", pgUrl, true)]] as [string, () => Promise<Record<string, unknown>>][]) : []),
  ] : [];
  const throughputSystems: [string, () => Promise<Record<string, unknown>>][] = [
    ["idem sqlite", () => idemThroughput("sqlite", null)],
    ...instrumentedSystems,
    ...(pgUrl ? ([
      ["idem postgres", () => idemThroughput("postgres", pgUrl)],
      ["graphile-worker default", () => graphileThroughput(pgUrl!, "default")],
      ["graphile-worker batched", () => graphileThroughput(pgUrl!, "batched")],
      ["pg-boss", () => pgBossThroughput(pgUrl!)],
    ] as [string, () => Promise<Record<string, unknown>>][]) : []),
    ...("skipped" in redis ? [] : ([["bullmq", () => bullmqThroughput(redis)]] as [string, () => Promise<Record<string, unknown>>][])),
  ];
  const chainSystems: [string, () => Promise<Record<string, unknown>>][] = [
    ["idem sqlite", () => idemChain("sqlite", null)],
    ...(pgUrl ? ([
      ["idem postgres", () => idemChain("postgres", pgUrl)],
      ["graphile-worker default", () => graphileChain(pgUrl!)],
    ] as [string, () => Promise<Record<string, unknown>>][]) : []),
    ...("skipped" in redis ? [] : ([["bullmq", () => bullmqChain(redis)]] as [string, () => Promise<Record<string, unknown>>][])),
  ];

  if (ONLY) {
    const chosen = ([name]: [string, unknown]) => ONLY.some((o) => name.startsWith(o));
    throughputSystems.splice(0, Infinity, ...throughputSystems.filter(chosen));
    chainSystems.splice(0, Infinity, ...chainSystems.filter(chosen));
  }
  for (let round = 0; round < ROUNDS; round++) {
    const rotate = <T,>(xs: T[]) => [...xs.slice(round % xs.length), ...xs.slice(0, round % xs.length)];
    if (SHAPES.has("ceiling")) keep("sqlite", "ceiling", { round, ...sqliteCeiling() });
    if (SHAPES.has("throughput")) for (const [system, measure] of rotate(throughputSystems)) keep(system, "throughput", { round, ...(await measure()) });
    if (SHAPES.has("chain")) for (const [system, measure] of rotate(chainSystems)) keep(system, "chain", { round, ...(await measure()) });
  }
  if (SHAPES.has("big")) for (const tasks of BIG) keep("idem sqlite", `one run of ${tasks}`, await idemBigRun(tasks));
  if (SHAPES.has("history")) {
    const kinds = (["sqlite", ...(pgUrl ? ["postgres"] : [])] as Kind[]).filter((k) => !ONLY || ONLY.some((o) => `idem ${k}`.startsWith(o)));
    for (let round = 0; round < ROUNDS; round++) {
      // Interleaved: empty then seeded, seeded then empty, one kind after the other.
      for (const kind of kinds) {
        for (const seeded of round % 2 ? [true, false] : [false, true]) {
          keep(`idem ${kind}`, seeded ? "history" : "history empty", { round, ...(await idemHistory(kind, pgUrl, seeded)) });
        }
      }
    }
  }

  const m = (key: string, field: string) => median((figures[key] ?? []).map((f) => f[field]!).filter((x) => typeof x === "number"));
  const ratio = (a: number, b: number) => (Number.isFinite(a) && Number.isFinite(b) && b > 0 ? +(a / b).toFixed(3) : null);
  const sqlite = m("idem sqlite throughput", "jobsPerSecond");
  const postgresRate = m("idem postgres throughput", "jobsPerSecond");
  const perTask = (n: number) => m(`idem sqlite one run of ${n}`, "usPerTask");
  emit({
    summary: {
      medians: Object.fromEntries(Object.entries(figures).map(([key, list]) => [key, Object.fromEntries(
        Object.keys(list[0]!).filter((k) => k !== "round" && typeof list[0]![k] === "number").map((k) => [k, median(list.map((f) => f[k]!))]),
      )])),
      ratios: {
        sqliteToBullmq: ratio(sqlite, m("bullmq throughput", "jobsPerSecond")),
        sqliteToCeiling: ratio(sqlite, m("sqlite ceiling", "transactionsPerSecond")),
        postgresToGraphileBatched: ratio(postgresRate, m("graphile-worker batched throughput", "jobsPerSecond")),
        postgresToGraphileDefault: ratio(postgresRate, m("graphile-worker default throughput", "jobsPerSecond")),
        postgresToPgBoss: ratio(postgresRate, m("pg-boss throughput", "jobsPerSecond")),
        // instrumentation: >= 0.95 meets "costs at most 5% of worker throughput"
        instrumentedToPlainSqlite: ratio(m("idem sqlite instrumented throughput", "jobsPerSecond"), sqlite),
        instrumentedToPlainPostgres: ratio(m("idem postgres instrumented throughput", "jobsPerSecond"), postgresRate),
        chainP50SqliteToBullmq: ratio(m("idem sqlite chain", "p50Ms"), m("bullmq chain", "p50Ms")),
        chainP50PostgresToGraphile: ratio(m("idem postgres chain", "p50Ms"), m("graphile-worker default chain", "p50Ms")),
        perTaskCostBiggestToSmallest: ratio(perTask(Math.max(...BIG)), perTask(Math.min(...BIG))),
        // history: >= 0.9 (throughput) and <= 1.1 (hop p50) meet "within 10% of an empty store"
        historyThroughputSqlite: ratio(m("idem sqlite history", "jobsPerSecond"), m("idem sqlite history empty", "jobsPerSecond")),
        historyChainP50Sqlite: ratio(m("idem sqlite history", "chainP50Ms"), m("idem sqlite history empty", "chainP50Ms")),
        historyThroughputPostgres: ratio(m("idem postgres history", "jobsPerSecond"), m("idem postgres history empty", "jobsPerSecond")),
        historyChainP50Postgres: ratio(m("idem postgres history", "chainP50Ms"), m("idem postgres history empty", "chainP50Ms")),
      },
      workerPeakRssMb: Math.max(...Object.entries(figures).filter(([k]) => k.startsWith("idem")).flatMap(([, l]) => l.map((f) => f.workerPeakRssMb ?? 0))),
      loadAtEnd: load(),
      started,
      ended: new Date().toISOString(),
    },
  });
} finally {
  await stopAll();
}
process.exit(0);
