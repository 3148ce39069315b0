/**
 * Fan-out at scale (issue 30): one run of a task mapped over N no-op items, beside one run of a
 * pipeline of N plain no-op tasks, on a SQLite state file and on PostgreSQL, interleaved (for
 * each size: SQLite fan-out, SQLite plain, PostgreSQL fan-out, PostgreSQL plain). Each
 * measurement is a project of its own with a fresh `idem scheduler` and `idem worker` (default
 * concurrency), warmed by a two-task run, so peaks and CPU belong to that run alone.
 *   expansionMs:     the mapped task's step started -> its instances committed and seen (polled
 *                    every 5 ms): the list found in a task host, sent to the worker, validated
 *                    and written in chunks of 5,000 rows a statement in the finish's transaction
 *   wallMs:          trigger -> run succeeded, seen by polling
 *   perItemMs:       (run end - first attempt's start) / N, from the store's own times
 *   workerPeakRssMb: the worker's VmHWM, read before it stops (target < 300 MB)
 *   schedulerCpuMs:  the scheduler's CPU (user + system) from the trigger to the run's end
 *   workerCpuMs:     the same for the worker (its task hosts not included)
 * and per store: perItemRatio = fan-out perItemMs at the largest size / at the smallest
 * (target <= 1.5 for 100,000 / 1,000). Prints one JSON line.
 * Env: BENCH_FANOUT_SIZES (1000,10000,100000); BENCH_FANOUT_PLAIN_MAX (10000): plain pipelines
 * above it are not run (a pipeline of 100,000 tasks is defined, hashed and inserted as a graph
 * of that size: impractical at that count, and not what fan-out replaces); BENCH_FANOUT_STORES
 * (sqlite,postgres); PostgreSQL from IDEM_TEST_PG_URL or IDEM_BENCH_PG_URL, else skipped with
 * the reason.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { cpuMsOf, peakRssMb } from "../lib/servers.ts";
import { bound, freshSchema, project, repo, sql, startIdem, until, withSchema } from "../pg/lib/cluster.ts";

const NAME = "fan-out";
const SIZES = (process.env.BENCH_FANOUT_SIZES ?? "1000,10000,100000").split(",").map(Number);
const PLAIN_MAX = Number(process.env.BENCH_FANOUT_PLAIN_MAX ?? 10_000);
const STORES = (process.env.BENCH_FANOUT_STORES ?? "sqlite,postgres").split(",");
const PG_URL = process.env.IDEM_TEST_PG_URL ?? process.env.IDEM_BENCH_PG_URL ?? null;
if (SIZES.some((n) => !Number.isInteger(n) || n < 1)) throw new Error(`BENCH_FANOUT_SIZES: whole numbers above 0, not ${process.env.BENCH_FANOUT_SIZES}`);
bound(3 * 3600, NAME);
const began = Date.now();

type Shape = "fanOut" | "plain";
type StoreKind = "sqlite" | "postgres";

/** What the bench reads of the store while a run goes, whichever store. */
interface Reader {
  one<T>(text: string, params: unknown[]): Promise<T | undefined>;
  close(): Promise<void>;
}

function sqliteReader(dir: string): Reader {
  let db: Database.Database | null = null;
  return {
    async one<T>(text: string, params: unknown[]) {
      if (!db) {
        if (!existsSync(join(dir, ".idem", "state.db"))) return undefined;
        db = new Database(join(dir, ".idem", "state.db"), { readonly: true });
        db.pragma("busy_timeout = 5000");
      }
      try {
        return db.prepare(text.replace(/\$\d+/g, "?")).get(...params) as T | undefined;
      } catch (error) {
        if (/no such table/.test((error as Error).message)) return undefined;
        throw error;
      }
    },
    async close() {
      db?.close();
    },
  };
}

async function postgresReader(url: string, schema: string): Promise<Reader> {
  const client = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` });
  await client.connect();
  return {
    async one<T>(text: string, params: unknown[]) {
      try {
        return (await client.query(text, params)).rows[0] as T | undefined;
      } catch (error) {
        if ((error as { code?: string }).code === "42P01") return undefined;
        throw error;
      }
    },
    close: () => client.end(),
  };
}

function pipelineFile(shape: Shape, n: number): string {
  const work = shape === "fanOut"
    ? `{ work: { map: { items: () => Array.from({ length: ${n} }, (_, i) => "item-" + i), maxItems: ${Math.max(n, 100_000)} }, run: () => {} } }`
    : `Object.fromEntries(Array.from({ length: ${n} }, (_, i) => ["t" + i, { run: () => {} }]))`;
  return `import { pipeline } from "idem";
// No caps of their own: the worker's slots are what is measured.
export const warm = pipeline("warm", { schedule: "manual" }, { a: { run: () => {} }, b: { after: ["a"], run: () => {} } });
export const measured = pipeline("measured", { schedule: "manual", maxActiveTasks: 10000000 }, ${work});
`;
}

async function measure(store: StoreKind, shape: Shape, n: number) {
  const schema = store === "postgres" ? freshSchema("bench_fanout") : null;
  const stateLine = schema ? `state: ${JSON.stringify(withSchema(PG_URL!, schema))}` : "";
  const { dir, cleanup } = project({
    "idem.config.ts": `import { defineConfig } from "idem";\nexport default defineConfig({ ${stateLine} });\n`,
    "pipelines/fan.ts": pipelineFile(shape, n),
  });
  const idem = (...args: string[]) => {
    const result = spawnSync(process.execPath, [join(repo, "bin/idem.js"), ...args], { cwd: dir, encoding: "utf8", timeout: 120_000 });
    if (result.status !== 0) throw new Error(`idem ${args.join(" ")} exited ${result.status}: ${result.stdout}${result.stderr}`);
  };
  const scheduler = startIdem(dir, "scheduler");
  const worker = startIdem(dir, "worker");
  const reader = schema ? await postgresReader(PG_URL!, schema) : sqliteReader(dir);
  const runState = async (runId: string) => (await reader.one<{ state: string }>("SELECT state FROM runs WHERE run_id = $1", [runId]))?.state;
  try {
    await until("the worker to register", async () => (await reader.one("SELECT 1 FROM workers", [])) !== undefined, 120_000, 50);
    idem("trigger", "warm", "--date", "2026-01-01");
    await until("the warm-up run", async () => (await runState("warm@2026-01-01")) === "success", 120_000, 20);

    const runId = "measured@2026-01-01";
    const schedulerCpu = cpuMsOf(scheduler.pid)!;
    const workerCpu = cpuMsOf(worker.pid)!;
    const t0 = Date.now();
    idem("trigger", "measured", "--date", "2026-01-01");
    let expansionMs: number | null = null;
    if (shape === "fanOut") {
      let stepStartedAt: number | null = null;
      await until("the instances to be written", async () => {
        if (stepStartedAt === null) {
          const step = await reader.one<{ started_at: string | number }>("SELECT started_at FROM attempts WHERE run_id = $1 AND task_id = 'work'", [runId]);
          stepStartedAt = step ? Number(step.started_at) : null;
        }
        const row = await reader.one<{ map_total: number | null }>("SELECT map_total FROM task_instances WHERE run_id = $1 AND task_id = 'work'", [runId]);
        return row?.map_total !== null && row?.map_total !== undefined;
      }, 3_600_000, 5);
      expansionMs = Date.now() - stepStartedAt!;
    }
    await until(`${runId} to succeed`, async () => {
      const state = await runState(runId);
      if (state === "failed") throw new Error(`${store} ${shape} ${n}: ${runId} failed`);
      return state === "success";
    }, 3_600_000, 50);
    const wallMs = Date.now() - t0;
    const schedulerCpuMs = cpuMsOf(scheduler.pid)! - schedulerCpu;
    const workerCpuMs = cpuMsOf(worker.pid)! - workerCpu;
    const workerPeakRssMb = peakRssMb(worker.pid);
    const span = (await reader.one<{ s: string; e: string; n: string }>(
      "SELECT min(a.started_at) AS s, max(r.ended_at) AS e, count(*) AS n FROM attempts a JOIN runs r ON r.run_id = a.run_id WHERE a.run_id = $1", [runId]))!;
    const attempts = Number(span.n);
    if (attempts !== n + (shape === "fanOut" ? 1 : 0)) throw new Error(`${store} ${shape} ${n}: ${attempts} attempts`);
    const perItemMs = +((Number(span.e) - Number(span.s)) / n).toFixed(4);
    return { expansionMs, wallMs, perItemMs, workerPeakRssMb, schedulerCpuMs, workerCpuMs };
  } finally {
    await reader.close();
    await worker.stop();
    await scheduler.stop();
    if (schema) await sql(PG_URL!, `DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    cleanup();
  }
}

const skipped: Record<string, string> = {};
const stores = STORES.filter((s): s is StoreKind => {
  if (s !== "sqlite" && s !== "postgres") throw new Error(`BENCH_FANOUT_STORES: sqlite or postgres, not ${s}`);
  if (s === "postgres" && !PG_URL) {
    skipped.postgres = "set IDEM_TEST_PG_URL (or IDEM_BENCH_PG_URL) to a PostgreSQL server";
    return false;
  }
  return true;
});

const results: Record<string, Record<string, Record<number, unknown>>> = {};
for (const n of [...SIZES].sort((a, b) => a - b)) {
  for (const store of stores) {
    results[store] ??= { fanOut: {}, plain: {} };
    results[store]!.fanOut![n] = await measure(store, "fanOut", n);
    results[store]!.plain![n] = n <= PLAIN_MAX ? await measure(store, "plain", n) : { skipped: `above BENCH_FANOUT_PLAIN_MAX (${PLAIN_MAX})` };
  }
}

const smallest = Math.min(...SIZES);
const largest = Math.max(...SIZES);
const ratios = Object.fromEntries(Object.entries(results).map(([store, r]) => {
  const cost = (n: number) => (r.fanOut![n] as { perItemMs: number }).perItemMs;
  return [store, { sizes: `${largest}/${smallest}`, perItemRatio: +(cost(largest) / cost(smallest)).toFixed(3) }];
}));
console.log(JSON.stringify({ bench: NAME, sizes: SIZES, plainMax: PLAIN_MAX, skipped, results, ratios, totalWallMs: Date.now() - began }));
