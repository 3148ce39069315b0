import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import { hostname } from "node:os";
import { Scheduler } from "../../engine/scheduler/scheduler.ts";
import { notifyWork, subscribeToScheduling } from "../../engine/worker/wakeup.ts";
import { Worker } from "../../engine/worker/worker.ts";
import type { Cli } from "../lazy.ts";
import { openEngine, type ProjectEngine as Engine } from "../project.ts";
import { openHttp, type HttpFlags } from "./serve.ts";

export function scheduler(cli: Cli, flags: { healthPort?: number }) {
  return daemon(cli, (engine, signal) => runScheduler(engine, signal), { role: "scheduler", healthPort: flags.healthPort });
}

export function worker(cli: Cli, options: WorkerFlags & { healthPort?: number }) {
  return daemon(cli, (engine, signal) => runWorker(engine, signal, options), { role: "worker", healthPort: options.healthPort });
}

export function dev(cli: Cli, options: WorkerFlags & HttpFlags & { healthPort?: number; serve: boolean }) {
  return daemon(cli, async (engine, signal) => {
    const server = options.serve ? await openHttp(engine, options, cli.global.user) : null;
    try {
      await Promise.all([runScheduler(engine, signal), runWorker(engine, signal, options)]);
    } finally {
      await server?.close();
    }
  }, { role: "dev", healthPort: options.healthPort });
}

interface WorkerFlags {
  concurrency?: number;
  grace: number;
}

/**
 * Every long-running process also runs a watchdog (freshness and "did not run" checks, alert
 * delivery; one process at a time holds its lease), so no single process is needed for alerts.
 * `role` names the process for `idem health`.
 */
export async function daemon(cli: Cli, body: (engine: Engine, signal: AbortSignal) => Promise<void>, options: { role: string; healthPort?: number }): Promise<void> {
  const { role, healthPort } = options;
  const engine = await openEngine(cli.global, { pipelines: true });
  const stop = new AbortController();
  const onSignal = (name: string) => {
    if (stop.signal.aborted) return;
    log(`${name}: stopping`);
    stop.abort();
  };
  process.on("SIGTERM", () => onSignal("SIGTERM"));
  process.on("SIGINT", () => onSignal("SIGINT"));
  for (const broken of engine.brokenFiles()) log(`pipeline file not loaded, its pipelines do not run: ${broken.message}`);
  const reloading = watchPipelineFiles(engine, stop.signal);
  try {
    await engine.store.ensurePools(Object.entries(engine.config.pools).map(([name, slots]) => ({ name, slots })), engine.clock.now());
    const server = healthPort === undefined ? null : await serveHealth(engine, healthPort);
    const watchdog = engine.watchdog(role, log).run(stop.signal);
    try {
      await body(engine, stop.signal);
    } finally {
      stop.abort();
      await watchdog;
      server?.close();
    }
  } finally {
    if (!stop.signal.aborted) stop.abort();
    await reloading;
    await engine.close();
    await engine.store.close();
  }
}

/**
 * Looks at the pipeline files every `reloadMs`: added, changed and removed files take effect
 * without a restart. A file that breaks stops only its own pipelines, and says so in the log.
 */
async function watchPipelineFiles(engine: Engine, signal: AbortSignal): Promise<void> {
  let broken = new Set(engine.brokenFiles().map((b) => b.message));
  while (!signal.aborted) {
    await engine.clock.sleep(engine.config.reloadMs, signal);
    if (signal.aborted) break;
    const before = new Map(engine.pipelines().map((p) => [p.id, p.version]));
    let changed: boolean;
    try {
      changed = await engine.catalog.refresh();
    } catch (error) {
      log(`reloading pipeline files failed: ${(error as Error).message}`);
      continue;
    }
    if (!changed) continue;
    const after = new Map(engine.pipelines().map((p) => [p.id, p.version]));
    const added = [...after.keys()].filter((id) => !before.has(id));
    const removed = [...before.keys()].filter((id) => !after.has(id));
    const updated = [...after.keys()].filter((id) => before.has(id) && before.get(id) !== after.get(id));
    log(`pipeline files reloaded: ${after.size} pipeline(s)` +
      (added.length ? `; added ${added.join(", ")}` : "") + (updated.length ? `; changed ${updated.join(", ")}` : "") + (removed.length ? `; removed ${removed.join(", ")}` : ""));
    const now = new Set(engine.brokenFiles().map((b) => b.message));
    for (const message of now) if (!broken.has(message)) log(`pipeline file not loaded, its pipelines do not run: ${message}`);
    for (const message of broken) if (!now.has(message)) log(`pipeline file fixed: ${message.split(":")[0]}`);
    broken = now;
  }
}

async function runScheduler(engine: Engine, signal: AbortSignal): Promise<void> {
  const holder = `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
  let leading: boolean | null = null;
  const scheduler = new Scheduler({
    store: engine.store,
    clock: engine.clock,
    pipelines: engine.pipelines(),
    catalog: engine.catalog,
    holder,
    leaseTtlMs: engine.config.schedulerLeaseMs,
    frozen: engine.config.frozen,
    log,
    onWork: () => notifyWork(engine.stateDir),
    onLeadChange: (leader, leaderHolder) => {
      leading = leader;
      log(leader ? `scheduler ${holder} leads` : `scheduler ${holder} stands by (leader: ${leaderHolder})`);
    },
  });
  log(`scheduler ${holder}: ${engine.pipelines().length} pipeline(s)`);
  await scheduler.run(signal, {
    subscribe: (wake) => subscribeToScheduling(engine.store, engine.stateDir, wake),
  });
}

/**
 * GET /health: 200 with the checker's health when the scheduler's heartbeat is fresh, 503 when
 * not; `brokenFiles` lists pipeline files that did not load (their pipelines do not run, the
 * others do, so they do not make the scheduler unhealthy).
 */
async function serveHealth(engine: Engine, port: number): Promise<Server> {
  const server = createServer((request, response) => {
    if (request.url !== "/health") {
      response.writeHead(404).end();
      return;
    }
    engine
      .installationHealth()
      .then((health) => {
        const body = { ...health.checker, brokenFiles: health.brokenFiles };
        response.writeHead(health.checker.healthy ? 200 : 503, { "content-type": "application/json" }).end(JSON.stringify(body));
      })
      .catch((error) => response.writeHead(500).end(String(error)));
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  const address = server.address();
  log(`health on http://127.0.0.1:${typeof address === "object" && address ? address.port : port}/health`);
  return server;
}

async function runWorker(engine: Engine, signal: AbortSignal, flags: WorkerFlags): Promise<void> {
  const concurrency = flags.concurrency ?? engine.config.concurrency;
  const grace = flags.grace;
  const worker = new Worker({
    store: engine.store,
    clock: engine.clock,
    pipelines: engine.pipelines(),
    catalog: engine.catalog,
    runner: engine.taskRunner(concurrency),
    logMaxBytes: engine.config.logMaxBytes,
    masker: engine.masker,
    withheldEnv: engine.withheldEnv,
    stateDir: engine.stateDir,
    projectDir: engine.config.rootDir,
    workerId: engine.workerId,
    concurrency,
    leaseMs: engine.config.workerLeaseMs,
    frozen: engine.config.frozen, connections: engine.config.connections,
    graceMs: grace * 1000,
    limits: {
      parallelism: engine.config.parallelism,
      get maxActiveTasks() {
        return Object.fromEntries(engine.pipelines().map((p) => [p.id, p.maxActiveTasks]));
      },
    },
    log,
    onAttempt: (claim, outcome) =>
      log(`${claim.runId} ${claim.taskId} try ${claim.tryNumber}: ${outcome.taskState}${outcome.errorMessage ? ` (${outcome.errorMessage})` : ""}`),
  });
  log(`worker ${engine.workerId}: concurrency ${concurrency}`);
  engine.warmTaskHosts(1);
  await worker.run(signal);
}

export function log(line: string): void {
  process.stdout.write(`${new Date().toISOString()} ${line}\n`);
}
