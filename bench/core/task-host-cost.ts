/**
 * What the task hosts cost in CPU: their own processes' CPU (from /proc), not the worker's.
 *   boot:      a pool of one host, one no-op attempt answered, the host's CPU so far (its boot,
 *              idem's modules, the pipeline file) and the wall time to the answer; then closed
 *   attempts:  one warm host, BENCH_ATTEMPTS no-op attempts one after another: the host's and
 *              this process's (the pool's side) CPU per attempt
 *   burst:     a pool of 10 as a worker at concurrency 10 with prefetch feeds it (50 given at
 *              once, kept full), BENCH_BURST no-op attempts: hosts started, their CPU per task
 *              (boots included) and the pool's
 * The pool is idem's as shipped (dist/, compiled first; BENCH_TREE=<another checkout> measures
 * that checkout's dist/, for before/after in interleaved runs). Prints one JSON line per round.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { createRequire } from "node:module";
import { loadavg } from "node:os";
import { join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath, pathToFileURL } from "node:url";

const repo = resolve(fileURLToPath(new URL("../..", import.meta.url)));
const tree = resolve(process.env.BENCH_TREE ?? repo);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const BOOTS = Number(process.env.BENCH_BOOTS ?? 5);
const ATTEMPTS = Number(process.env.BENCH_ATTEMPTS ?? 2_000);
const BURST = Number(process.env.BENCH_BURST ?? 4_000);

const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
if (spawnSync(process.execPath, [tsc, "-p", "tsconfig.json", "--incremental", "--tsBuildInfoFile", "dist/.tsbuildinfo"], { cwd: tree, stdio: "inherit" }).status !== 0) {
  console.log(JSON.stringify({ bench: "task-host-cost", error: "npm run build failed" }));
  process.exit(1);
}

interface Pool {
  call(request: unknown): Promise<{ outcome: string }>;
  warm(count?: number): void;
  close(): Promise<void>;
  readonly size: number;
}
type PoolClass = new (options: { size: number; cwd: string; logMaxBytes: null; secrets: string[]; preload: () => string[] }) => Pool;
const { TaskHostPool } = (await import(pathToFileURL(join(tree, "dist/src/engine/task-host/pool.js")).href)) as { TaskHostPool: PoolClass };
// The compiled-copy cache moved from cli/ to engine/project/: either tree works.
const cacheModule = ["dist/src/engine/project/typescript-cache.js", "dist/src/cli/typescript-cache.js"].find((f) => existsSync(join(tree, f)))!;
const { importTypeScript } = (await import(pathToFileURL(join(tree, cacheModule)).href)) as {
  importTypeScript: (file: string, dir: string) => Promise<Record<string, { version: string }>>;
};

mkdirSync(join(tree, ".tmp"), { recursive: true });
const dir = mkdtempSync(join(tree, ".tmp", "bench-hosts-"));
mkdirSync(join(dir, "pipelines"));
const file = join(dir, "pipelines", "p.ts");
writeFileSync(file, `import { pipeline } from "idem";\nexport const p = pipeline("p", {}, { t: { run: () => {} } });\n`);
// As the worker does when it loads the project: the compiled copies exist before a host starts.
const version = (await importTypeScript(file, dir)).p!.version;

const TICK_MS = 10; // /proc's clock ticks (USER_HZ 100)
/** CPU (ms) of this process's task hosts alive now (with their supervising shells), and how many there are. */
function hostsCpu(): { ms: number; hosts: number } {
  let ms = 0;
  let hosts = 0;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, "utf8");
      if (!argv.includes("host-main")) continue; // the host, and its supervising shell
      let ancestor = entry;
      let ours = false;
      for (let i = 0; i < 4 && !ours; i++) {
        ancestor = readFileSync(`/proc/${ancestor}/stat`, "utf8").split(") ")[1]!.split(" ")[1]!;
        ours = ancestor === String(process.pid);
      }
      if (!ours) continue;
      const fields = readFileSync(`/proc/${entry}/stat`, "utf8").split(") ")[1]!.split(" ");
      ms += (Number(fields[11]) + Number(fields[12])) * TICK_MS;
      if (argv.startsWith(`${process.execPath}\0`)) hosts++;
    } catch {
      // it exited meanwhile
    }
  }
  return { ms, hosts };
}

let attemptId = 1;
function noop(pool: Pool): Promise<void> {
  return pool.call({
    entry: "run", file, version,
    claim: {
      attemptId: attemptId++, runId: "p@2026-09-01", pipelineId: "p", taskId: "t", tryNumber: 1, maxTries: 1, intervalStart: Date.UTC(2026, 8, 1),
      intervalEnd: Date.UTC(2026, 8, 2), businessDate: "2026-09-01", graphVersion: version, params: {}, logPath: join(dir, "t.log"),
      leaseExpiresAt: 0, firstStartedAt: 0, trigger: "manual", backfillId: null,
    },
    projectFrozen: [], watermarks: { get: async () => null, save: async () => {} }, connections: {}, upstream: {}, projectDir: dir,
    timeoutMs: null, graceMs: 1_000,
  }).then((result) => {
    if (result.outcome !== "success") throw new Error(`no-op attempt failed: ${JSON.stringify(result)}`);
  });
}

const newPool = (size: number) => new TaskHostPool({ size, cwd: dir, logMaxBytes: null, secrets: [], preload: () => [file] });
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const cpuUs = (since: NodeJS.CpuUsage) => {
  const used = process.cpuUsage(since);
  return used.user + used.system;
};

async function boots() {
  const cpu: number[] = [];
  const wall: number[] = [];
  for (let i = 0; i < BOOTS; i++) {
    const pool = newPool(1);
    const t0 = performance.now();
    await noop(pool);
    wall.push(performance.now() - t0);
    cpu.push(hostsCpu().ms);
    await pool.close();
  }
  return { bootHostCpuMs: median(cpu), bootWallMs: Math.round(median(wall)) };
}

async function attempts() {
  const pool = newPool(1);
  await noop(pool);
  const host0 = hostsCpu().ms;
  const pool0 = process.cpuUsage();
  for (let i = 0; i < ATTEMPTS; i++) await noop(pool);
  const poolUs = cpuUs(pool0);
  const hostUs = (hostsCpu().ms - host0) * 1000;
  await pool.close();
  return { hostUsPerAttempt: Math.round(hostUs / ATTEMPTS), poolUsPerAttempt: Math.round(poolUs / ATTEMPTS) };
}

async function burst() {
  const pool = newPool(10);
  pool.warm(1);
  const pool0 = process.cpuUsage();
  const t0 = performance.now();
  let given = 0;
  let peakHosts = 0;
  await new Promise<void>((done, fail) => {
    let inFlight = 0;
    const more = () => {
      while (inFlight < 50 && given < BURST) {
        given++;
        inFlight++;
        noop(pool).then(() => {
          inFlight--;
          peakHosts = Math.max(peakHosts, pool.size);
          if (given >= BURST && inFlight === 0) done();
          else more();
        }, fail);
      }
    };
    more();
  });
  const wallMs = performance.now() - t0;
  const poolUs = cpuUs(pool0);
  const hosts = hostsCpu();
  await pool.close();
  return {
    burstTasksPerSecond: Math.round(BURST / (wallMs / 1000)), burstHosts: hosts.hosts, burstPeakHosts: peakHosts,
    burstHostsUsPerTask: Math.round((hosts.ms * 1000) / BURST), burstPoolUsPerTask: Math.round(poolUs / BURST),
  };
}

try {
  for (let round = 0; round < ROUNDS; round++) {
    const figures = { ...(await boots()), ...(await attempts()), ...(await burst()) };
    console.log(JSON.stringify({ bench: "task-host-cost", tree, round, ...figures, load: loadavg().map((l) => +l.toFixed(2)) }));
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
