/**
 * What running task code outside the worker's event loop costs, with no-op function tasks, side
 * by side with the in-loop runner idem used before (interleaved rounds, same process):
 *   start:   one no-op task called through the runner and answered; p50 / p99 in ms
 *   fan-out: one root and 1,000 children through the real engine on a SQLite state file; tasks/s
 * Prints one JSON line. Target: the task hosts cost at most 20% of the in-loop throughput.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { systemClock } from "../../src/core/model/clock.ts";
import type { ClaimedAttempt } from "../../src/store/port.ts";
import { Engine } from "../../src/engine/engine.ts";
import { PipelineCatalog } from "../../src/engine/project/catalog.ts";
import { AttemptLog } from "../../src/engine/executor/attempt-log.ts";
import { inlineRunner, type TaskCodeRunner } from "../../src/engine/executor/task-code-runner.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";

const N = Number(process.env.BENCH_TASKS ?? 1000);
const CALLS = Number(process.env.BENCH_CALLS ?? 2000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const repo = resolve(fileURLToPath(new URL("../..", import.meta.url)));

mkdirSync(join(repo, ".tmp"), { recursive: true });
const dir = mkdtempSync(join(repo, ".tmp", "bench-"));
mkdirSync(join(dir, "pipelines"));
const children = Array.from({ length: N }, (_, i) => `  c${i}: { after: ["root"], run: () => {} },`).join("\n");
writeFileSync(join(dir, "pipelines", "bench.ts"), `
import { pipeline } from ${JSON.stringify(join(repo, "src/core/pipeline/define.ts"))};
export const noop = pipeline("noop", {}, { t: { run: () => {} } });
export const fan = pipeline("fan", {}, {
  root: { run: () => {} },
${children}
});
`);
const catalog = await PipelineCatalog.load([join(dir, "pipelines")], dir);

function percentile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

async function engineFor(isolated: boolean, tag: string): Promise<{ engine: Engine; store: SqliteStore }> {
  const stateDir = join(dir, `state-${tag}`);
  const store = new SqliteStore(join(stateDir, "state.db"));
  await store.migrate();
  const engine = new Engine({
    store, clock: systemClock, stateDir, projectDir: dir,
    pipelines: catalog.pipelines(),
    catalog: isolated ? catalog : undefined,
  });
  return { engine, store };
}

async function starts(runner: TaskCodeRunner, calls: number): Promise<{ p50: number; p99: number; workerCpuUsPerTask: number }> {
  const pipeline = catalog.get("noop")!;
  const task = pipeline.tasks.get("t")!;
  const claim: ClaimedAttempt = {
    codeVersion: null, attemptId: 1, runId: "noop@2026-09-01", pipelineId: "noop", taskId: "t", tryNumber: 1, maxTries: 1,
    intervalStart: Date.UTC(2026, 8, 1), intervalEnd: Date.UTC(2026, 8, 2), businessDate: "2026-09-01",
    graphVersion: pipeline.version, params: {}, logPath: join(dir, "noop.log"), leaseExpiresAt: 0, firstStartedAt: 0,
    trigger: "manual", backfillId: null, readySince: null, mapKey: null, mapItem: null,
  };
  const watermarks = { get: async () => null, save: async () => {} };
  const times: number[] = [];
  const cpu = process.cpuUsage();
  for (let i = 0; i < calls; i++) {
    const log = new AttemptLog(claim.logPath, systemClock);
    const t0 = performance.now();
    const result = await runner.call({ pipeline, task, claim, log, projectFrozen: [], watermarks, connections: {}, upstream: {}, traceparent: null, projectDir: dir, timeoutMs: null, graceMs: 1_000 });
    times.push(performance.now() - t0);
    log.close();
    if (result.outcome !== "success") throw new Error(`no-op task failed: ${JSON.stringify(result)}`);
  }
  const used = process.cpuUsage(cpu);
  times.sort((a, b) => a - b);
  return { p50: +percentile(times, 0.5).toFixed(3), p99: +percentile(times, 0.99).toFixed(3), workerCpuUsPerTask: Math.round((used.user + used.system) / calls) };
}

async function fanOut(engine: Engine, concurrency: number): Promise<number> {
  const t0 = performance.now();
  const result = await engine.runForDate("fan", "2026-09-01", { concurrency });
  const wall = performance.now() - t0;
  if (result.run.state !== "success") throw new Error("fan-out run failed");
  return Math.round(((N + 1) / wall) * 1000);
}

const inLoop = await engineFor(false, "in-loop");
const hosted = await engineFor(true, "hosts");
const hostedRunner = hosted.engine.taskRunner(8);
// Warm up: JIT, SQLite page cache, and every task host booted and holding the pipeline file.
await starts(inlineRunner, 200);
await Promise.all(Array.from({ length: 8 }, () => starts(hostedRunner, 50)));
await fanOut(inLoop.engine, 8);
await fanOut(hosted.engine, 8);

type Start = Awaited<ReturnType<typeof starts>>;
const rounds: { startInLoop: Start; startHosted: Start; fanOutInLoop: number; fanOutHosted: number }[] = [];
for (let round = 0; round < ROUNDS; round++) {
  const startInLoop = await starts(inlineRunner, CALLS);
  const startHosted = await starts(hostedRunner, CALLS);
  const fanOutInLoop = await fanOut(inLoop.engine, 8);
  const fanOutHosted = await fanOut(hosted.engine, 8);
  rounds.push({ startInLoop, startHosted, fanOutInLoop, fanOutHosted });
}
await hosted.engine.close();
await inLoop.store.close();
await hosted.store.close();
rmSync(dir, { recursive: true, force: true });

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const throughputRatio = median(rounds.map((r) => r.fanOutHosted / r.fanOutInLoop));
console.log(JSON.stringify({
  bench: "task-hosts",
  tasks: N + 1,
  concurrency: 8,
  rounds,
  fanOutHostedOverInLoop: +throughputRatio.toFixed(3),
  isolationCostPercent: Math.round((1 - throughputRatio) * 100),
}));
