/**
 * A 3-year (1,096-day) backfill of a 10-task no-op daily pipeline with --max-active-runs 16,
 * on SQLite: the time to produce the plan (in process, through the engine), then the wall time
 * of the whole backfill run by one scheduler and two worker processes.
 * Prints one JSON line. Targets: plan < 1 s, whole backfill < 20 s on a 2-core machine.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import Database from "better-sqlite3";
import { openEngine } from "../../src/cli/project.ts";

const repo = resolve(import.meta.dirname, "../..");
const bin = join(repo, "bin/idem.js");
mkdirSync(join(repo, ".tmp"), { recursive: true });
const dir = mkdtempSync(join(repo, ".tmp", "bench-backfill-"));
mkdirSync(join(dir, "pipelines"));
writeFileSync(join(dir, "idem.config.ts"), `import { defineConfig } from "idem";\nexport default defineConfig({ concurrency: 16 });\n`);
writeFileSync(
  join(dir, "pipelines/three_years.ts"),
  `import { pipeline, daily } from "idem";
const tasks = {};
for (let i = 0; i < 10; i++) tasks["t" + i] = { after: i ? ["t" + (i - 1)] : [], run: () => {} };
export const threeYears = pipeline("three_years", { schedule: daily({ at: "00:00" }), start: "2023-01-01" }, tasks);
`,
);

function idem(...args: string[]) {
  const result = spawnSync(process.execPath, [bin, ...args], { cwd: dir, encoding: "utf8" });
  if (result.status !== 0) throw new Error(`idem ${args.join(" ")}: ${result.stderr}`);
  return result.stdout;
}

try {
  idem("pause", "three_years", "--note", "backfill benchmark");
  const engine = await openEngine({ cwd: dir }, { pipelines: true });
  const t0 = performance.now();
  const plan = await engine.planBackfill("three_years", { from: "2023-01-01", to: "2025-12-31", maxActiveRuns: 16 });
  const planMs = Math.round(performance.now() - t0);
  const { backfill } = await engine.backfill("three_years", { from: "2023-01-01", to: "2025-12-31", maxActiveRuns: 16, reason: "benchmark" });
  await engine.close();

  const started = performance.now();
  const processes = [["scheduler"], ["worker"], ["worker"]].map((args) => spawn(process.execPath, [bin, ...args], { cwd: dir, stdio: "ignore" }));
  const db = () => new Database(join(dir, ".idem/state.db"), { readonly: true });
  for (;;) {
    const conn = db();
    const row = conn.prepare("SELECT state FROM backfills WHERE backfill_id = ?").get(backfill.backfillId) as { state: string };
    conn.close();
    if (row.state !== "running") break;
    if (performance.now() - started > 180_000) throw new Error("backfill benchmark: no end after 180 s");
    await new Promise((r) => setTimeout(r, 50));
  }
  const wallMs = Math.round(performance.now() - started);
  await Promise.all(processes.map((p) => new Promise<void>((r) => { p.once("exit", () => r()); p.kill("SIGTERM"); })));
  const intervals = plan.items.filter((i) => i.action === "create").length;
  console.log(JSON.stringify({
    bench: "backfill",
    intervals,
    taskInstances: intervals * 10,
    maxActiveRuns: 16,
    planMs,
    wallMs,
    tasksPerSecond: Math.round((intervals * 10) / (wallMs / 1000)),
    note: "wall time includes starting the scheduler and two worker processes",
  }));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
