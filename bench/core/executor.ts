/**
 * Executor overhead through the real engine and a SQLite state file, with no-op function tasks:
 *   chain:   1,000 tasks in a line; ms per hop (parent finished -> child started)
 *   fan-out: one root and 1,000 children; tasks/s
 * Prints one JSON line. Targets (2-core machine): <= 2 ms/hop, >= 2,000 tasks/s, < 200 MB RSS.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { systemClock } from "../../src/core/model/clock.ts";
import { pipeline } from "../../src/core/pipeline/define.ts";
import type { TaskSpec } from "../../src/core/pipeline/types.ts";
import { Engine } from "../../src/engine/engine.ts";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";

const N = Number(process.env.BENCH_TASKS ?? 1000);
let peakRss = 0;
const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 20);

async function withEngine<T>(tasks: Record<string, TaskSpec>, fn: (engine: Engine) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), "idem-bench-"));
  const store = new SqliteStore(join(dir, "state.db"));
  await store.migrate();
  const p = pipeline("bench", {}, tasks);
  const engine = new Engine({ store, clock: systemClock, stateDir: join(dir, ".idem"), pipelines: [p] });
  try {
    return await fn(engine);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

function percentile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

async function chain() {
  const started = new Array<number>(N);
  const finished = new Array<number>(N);
  const tasks: Record<string, TaskSpec> = {};
  for (let i = 0; i < N; i++) {
    tasks[`t${i}`] = {
      after: i === 0 ? [] : [`t${i - 1}`],
      run: () => {
        started[i] = performance.now();
        finished[i] = performance.now();
      },
    };
  }
  return withEngine(tasks, async (engine) => {
    const t0 = performance.now();
    const result = await engine.runForDate("bench", "2026-09-01", { concurrency: 4 });
    const wall = performance.now() - t0;
    if (result.run.state !== "success") throw new Error("chain run failed");
    const hops = started.slice(1).map((s, i) => s - finished[i]!).sort((a, b) => a - b);
    return {
      tasks: N,
      wallMs: Math.round(wall),
      msPerHopMean: +(hops.reduce((a, b) => a + b, 0) / hops.length).toFixed(3),
      msPerHopP50: +percentile(hops, 0.5).toFixed(3),
      msPerHopP99: +percentile(hops, 0.99).toFixed(3),
    };
  });
}

async function fanOut(concurrency: number) {
  const tasks: Record<string, TaskSpec> = { root: { run: () => {} } };
  for (let i = 0; i < N; i++) tasks[`c${i}`] = { after: ["root"], run: () => {} };
  return withEngine(tasks, async (engine) => {
    const t0 = performance.now();
    const result = await engine.runForDate("bench", "2026-09-01", { concurrency });
    const wall = performance.now() - t0;
    if (result.run.state !== "success") throw new Error("fan-out run failed");
    return { tasks: N + 1, concurrency, wallMs: Math.round(wall), tasksPerSecond: Math.round(((N + 1) / wall) * 1000) };
  });
}

await chain(); // warm up the JIT and SQLite page cache once
const result = {
  bench: "executor",
  chain: await chain(),
  fanOut: [await fanOut(8), await fanOut(64)],
  peakRssMb: 0,
};
clearInterval(sampler);
result.peakRssMb = Math.round(Math.max(peakRss, process.memoryUsage().rss) / 1e6);
console.log(JSON.stringify(result));
