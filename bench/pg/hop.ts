/**
 * Downstream start latency across two `idem worker` processes on PostgreSQL: a 300-task chain
 * where each task can only start once its parent has been recorded. A hop is measured inside the
 * tasks (parent returned -> child started), so it covers recording the parent's success, making
 * the child eligible in the same transaction, the NOTIFY reaching the other worker, its claim,
 * and the start. Target: p50 < 10 ms. Prints one JSON line, with each hop split in three by the
 * attempts' own times (p50 of each): `toRecordMs`, the parent's return in its task host to the
 * worker building its finish (IPC back); `toClaimMs`, that to the child's claim starting;
 * `toStartMs`, that to the child's code starting (IPC out, the start). When the worker that
 * finished the parent claims the child in the same transaction (`finishAndClaim`, the usual
 * case), the claim's time is taken as the call is made: `toClaimMs` is then the wait for the
 * loop, and `toStartMs` holds the whole transaction. When the other worker claims it,
 * `toClaimMs` holds the finish's transaction, its NOTIFY and the wake-up.
 * Usage: IDEM_TEST_PG_URL=postgres://... node bin/run-ts.js bench/pg/hop.ts
 */
import { pathToFileURL } from "node:url";
import { join } from "node:path";
import { benchUrl, bound, freshSchema, percentile, project, sql, startIdem, until, withSchema } from "./lib/cluster.ts";
import { PostgresStore } from "../../src/store/postgres/postgres-store.ts";
import { saveVersion, taskInstancesOf } from "../../src/engine/records/pipeline-records.ts";
import type { Pipeline } from "../../src/core/pipeline/types.ts";

const NAME = "pg-hop";
bound(300, NAME);
const url = benchUrl(NAME);
const CHAIN = 300;
const schema = freshSchema("bench_hop");
const stateUrl = withSchema(url, schema);
const { dir, cleanup } = project({
  "idem.config.ts": `import { defineConfig } from "idem";\nexport default defineConfig({ state: ${JSON.stringify(stateUrl)}, concurrency: 4 });\n`,
  "pipelines/chain.ts": `import { pipeline } from "idem";
import { performance } from "node:perf_hooks";
const now = () => performance.timeOrigin + performance.now();
const tasks = {};
for (let i = 0; i < ${CHAIN}; i++) tasks["t" + i] = { after: i ? ["t" + (i - 1)] : [], run: () => { const s = now(); return { s, e: now(), pid: process.pid }; } };
export const chain = pipeline("chain", {}, tasks);
`,
});

const store = new PostgresStore({ connectionString: stateUrl });
const workers: { stop: () => Promise<void> }[] = [];
try {
  await store.migrate();
  const { chain } = (await import(pathToFileURL(join(dir, "pipelines/chain.ts")).href)) as { chain: Pipeline };
  workers.push(startIdem(dir, "worker"), startIdem(dir, "worker"));
  await until("workers up", async () => (await sql<{ n: number }>(url, "SELECT count(*)::int AS n FROM workers", [], schema))[0]!.n === 2, 60_000, 50);
  const hops: number[] = [];
  const parts = { toRecordMs: [] as number[], toClaimMs: [] as number[], toStartMs: [] as number[] };
  const pids = new Set<number>();
  for (const [round, day] of ["2026-01-01", "2026-01-02"].entries()) {
    const start = Date.parse(`${day}T00:00:00Z`);
    await saveVersion(store, chain, Date.now(), "bench");
    await store.createRunIfAbsent({
      runId: `chain@${day}`, pipelineId: "chain", intervalStart: start, intervalEnd: start + 86_400_000, businessDate: day,
      graphVersion: chain.version, trigger: "manual", triggeredBy: "bench", reason: null, params: {}, tasks: taskInstancesOf(chain), createdAt: Date.now(),
    });
    await until("the chain", async () => (await store.getRun(`chain@${day}`))!.state === "success", 120_000, 20);
    if (round === 0) continue; // warm-up: compiles, connects, fills the statement caches
    const rows = await store.listAttempts(`chain@${day}`);
    const byTask = new Map(rows.map((r) => [r.taskId, r.summary as { s: number; e: number; pid: number }]));
    const attemptOf = new Map(rows.map((r) => [r.taskId, r]));
    for (let i = 1; i < CHAIN; i++) {
      const [parent, child] = [byTask.get(`t${i - 1}`)!, byTask.get(`t${i}`)!];
      const [recorded, claimed] = [attemptOf.get(`t${i - 1}`)!.endedAt!, attemptOf.get(`t${i}`)!.startedAt];
      hops.push(child.s - parent.e);
      parts.toRecordMs.push(recorded - parent.e);
      parts.toClaimMs.push(claimed - recorded);
      parts.toStartMs.push(child.s - claimed);
    }
    for (const r of rows) pids.add((r.summary as { pid: number }).pid);
  }
  hops.sort((a, b) => a - b);
  const p50s = Object.fromEntries(Object.entries(parts).map(([k, v]) => [k, percentile(v.sort((a, b) => a - b), 0.5)]));
  console.log(JSON.stringify({
    bench: NAME, chain: CHAIN, workers: 2, workersThatRanTasks: pids.size,
    p50Ms: percentile(hops, 0.5), p90Ms: percentile(hops, 0.9), p99Ms: percentile(hops, 0.99), maxMs: percentile(hops, 1), ...p50s, target: "p50 < 10 ms",
  }));
} finally {
  await Promise.all(workers.map((w) => w.stop()));
  await store.close();
  cleanup();
  await sql(url, `DROP SCHEMA IF EXISTS ${schema} CASCADE`);
}
process.exit(0);
