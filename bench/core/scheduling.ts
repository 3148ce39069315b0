/**
 * Scheduling overhead with real processes on one SQLite state file:
 *   hop:     downstream start latency across processes (two workers plus the `idem run` that
 *            started the chain; parent task ended -> child task started, which includes recording
 *            the parent and claiming the child): p50/p99.
 *   catchup: a 365-day catch-up of a 10-task daily pipeline (3,650 task instances) by one
 *            scheduler and two workers: wall time and tasks/s.
 *   history: hop latency again with 1,000,000 finished task instances in the store, and the
 *            scheduler's resident memory with 100 pipelines and that history.
 * Prints one JSON line. Targets: hop p50 < 5 ms, p99 < 50 ms; catch-up < 5 s; history within
 * 20% of empty; scheduler RSS < 300 MB.
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import Database from "better-sqlite3";

const repo = resolve(import.meta.dirname, "../..");
const bin = join(repo, "bin/idem.js");
const CHAIN = 300;

function project(files: Record<string, string>): string {
  mkdirSync(join(repo, ".tmp"), { recursive: true });
  const dir = mkdtempSync(join(repo, ".tmp", "bench-"));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, ".."), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return dir;
}

function start(dir: string, ...args: string[]) {
  const child = spawn(process.execPath, [bin, ...args], { cwd: dir, stdio: ["ignore", "ignore", "inherit"] });
  return {
    pid: child.pid!,
    stop: () => new Promise<void>((r) => { child.once("exit", () => r()); child.kill("SIGTERM"); }),
  };
}

async function until(what: string, check: () => boolean, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`bench: timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

function count(dir: string, sql: string): number {
  try {
    const db = new Database(join(dir, ".idem/state.db"), { readonly: true, fileMustExist: true });
    try {
      return (db.prepare(sql).get() as { n: number }).n;
    } finally {
      db.close();
    }
  } catch {
    return 0;
  }
}

function percentile(sorted: number[], q: number): number {
  return +sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(2);
}

const CONFIG = `import { defineConfig } from "idem";\nexport default defineConfig({ concurrency: 4 });\n`;
const CHAIN_PIPELINE = `
import { pipeline } from "idem";
import { performance } from "node:perf_hooks";
const now = () => performance.timeOrigin + performance.now();
const tasks = {};
for (let i = 0; i < ${CHAIN}; i++) tasks["t" + i] = { after: i ? ["t" + (i - 1)] : [], run: () => { const s = now(); return { s, e: now() }; } };
export const chain = pipeline("chain", {}, tasks);
`;

/** Runs the chain once through a worker pair and returns sorted hop latencies in ms. */
async function hops(dir: string): Promise<number[]> {
  const workers = [start(dir, "worker"), start(dir, "worker")];
  await until("workers up", () => count(dir, "SELECT count(*) AS n FROM workers") === 2, 30_000);
  const run = start(dir, "run", "chain", "--date", "2026-09-01");
  const runsBefore = count(dir, "SELECT count(*) AS n FROM attempts");
  await until("the chain", () => count(dir, "SELECT count(*) AS n FROM attempts WHERE state = 'success'") >= runsBefore + CHAIN);
  await run.stop();
  await Promise.all(workers.map((w) => w.stop()));
  const db = new Database(join(dir, ".idem/state.db"), { readonly: true });
  const rows = db.prepare("SELECT task_id, summary FROM attempts WHERE state = 'success' ORDER BY attempt_id DESC LIMIT ?").all(CHAIN) as { task_id: string; summary: string }[];
  db.close();
  const byTask = new Map(rows.map((r) => [r.task_id, JSON.parse(r.summary) as { s: number; e: number }]));
  const latencies: number[] = [];
  for (let i = 1; i < CHAIN; i++) latencies.push(byTask.get(`t${i}`)!.s - byTask.get(`t${i - 1}`)!.e);
  return latencies.sort((a, b) => a - b);
}

async function hopBench() {
  const dir = project({ "idem.config.ts": CONFIG, "pipelines/chain.ts": CHAIN_PIPELINE });
  try {
    await hops(dir); // warm-up: the first run creates the state file and compiles
    const latencies = await hops(dir);
    return { dir, latencies };
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

async function catchupBench() {
  const dir = project({
    "idem.config.ts": CONFIG.replace("concurrency: 4", "concurrency: 8"),
    "pipelines/year.ts": `
import { pipeline, daily } from "idem";
const tasks = {};
for (let i = 0; i < 10; i++) tasks["t" + i] = { after: i ? ["t" + (i - 1) ] : [], run: () => {} };
export const year = pipeline("year", { schedule: daily({ at: "00:00" }), start: "2025-01-01", end: "2025-12-31", maxActiveRuns: 32 }, tasks);
`,
  });
  try {
    const workers = [start(dir, "worker"), start(dir, "worker")];
    await until("workers up", () => count(dir, "SELECT count(*) AS n FROM workers") === 2, 30_000);
    const t0 = Date.now();
    const scheduler = start(dir, "scheduler");
    await until("365 runs", () => count(dir, "SELECT count(*) AS n FROM runs WHERE state = 'success'") === 365);
    const wallMs = Date.now() - t0;
    await Promise.all([scheduler.stop(), ...workers.map((w) => w.stop())]);
    return { taskInstances: 3650, wallMs, tasksPerSecond: Math.round(3650 / (wallMs / 1000)), note: "includes the scheduler process start (~0.5 s)" };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Fills the state file with 100,000 finished runs x 10 task instances, straight through SQL. */
function addHistory(dir: string): void {
  const db = new Database(join(dir, ".idem/state.db"));
  db.pragma("journal_mode = WAL");
  const run = db.prepare(`INSERT INTO runs (run_id, pipeline_id, interval_start, interval_end, business_date, state, trigger_kind, graph_version, created_at, started_at, ended_at)
    VALUES (?, ?, ?, ?, ?, 'success', 'schedule', 'old', ?, ?, ?)`);
  const ti = db.prepare(`INSERT INTO task_instances (run_id, task_id, state, try_number, max_tries, trigger_rule, started_at, ended_at)
    VALUES (?, ?, 'success', 1, 1, 'all_success', ?, ?)`);
  const attempt = db.prepare(`INSERT INTO attempts (run_id, task_id, try_number, state, worker_id, started_at, ended_at, log_path)
    VALUES (?, ?, 1, 'success', 'old', ?, ?, '')`);
  const day = 86_400_000;
  db.transaction(() => {
    for (let r = 0; r < 100_000; r++) {
      const pipelineId = `history_${r % 100}`;
      const start = Date.UTC(2000, 0, 1) + Math.floor(r / 100) * day;
      const runId = `${pipelineId}@${r}`;
      run.run(runId, pipelineId, start, start + day, new Date(start).toISOString().slice(0, 10), start, start, start + 1000);
      for (let t = 0; t < 10; t++) {
        ti.run(runId, `t${t}`, start, start + 100);
        attempt.run(runId, `t${t}`, start, start + 100);
      }
    }
  })();
  db.close();
}

async function historyBench(dir: string, emptyLatencies: number[]) {
  const t0 = Date.now();
  addHistory(dir);
  const fillMs = Date.now() - t0;
  const latencies = await hops(dir);
  // the scheduler's memory with 100 pipelines over that history
  const pipelines = Array.from({ length: 100 }, (_, i) =>
    `export const p${i} = pipeline("history_${i}", { schedule: daily({ at: "00:00" }), start: "2026-11-01" }, { t0: { run: () => {} } });`).join("\n");
  writeFileSync(join(dir, "pipelines/many.ts"), `import { pipeline, daily } from "idem";\n${pipelines}\n`);
  const scheduler = start(dir, "scheduler");
  await new Promise((r) => setTimeout(r, 4_000));
  const rssMb = Math.round(Number(readFileSync(`/proc/${scheduler.pid}/status`, "utf8").match(/VmRSS:\s+(\d+)/)![1]) / 1024);
  await scheduler.stop();
  const p50 = percentile(latencies, 0.5);
  return {
    finishedTaskInstances: 1_000_000,
    fillMs,
    hopP50Ms: p50,
    hopP99Ms: percentile(latencies, 0.99),
    p50VersusEmpty: +(p50 / percentile(emptyLatencies, 0.5)).toFixed(2),
    schedulerRssMbWith100Pipelines: rssMb,
  };
}

const { dir, latencies } = await hopBench();
try {
  const hop = { chain: CHAIN, workers: 2, p50Ms: percentile(latencies, 0.5), p90Ms: percentile(latencies, 0.9), p99Ms: percentile(latencies, 0.99) };
  const catchup = await catchupBench();
  const history = await historyBench(dir, latencies);
  console.log(JSON.stringify({ bench: "scheduling", hop, catchup, history }));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
