import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import { hostname } from "node:os";
import { Scheduler } from "../../engine/scheduler/scheduler.ts";
import { notifyWork, subscribeToWork } from "../../engine/worker/wakeup.ts";
import { Worker } from "../../engine/worker/worker.ts";
import { wholeNumber } from "../flags.ts";
import type { Cli } from "../lazy.ts";
import { openEngine, type ProjectEngine as Engine } from "../project.ts";
import { openHttp, type HttpFlags } from "./serve.ts";

export function scheduler(cli: Cli, flags: { healthPort?: string }) {
  return daemon(cli, (engine, signal) => runScheduler(engine, signal), { role: "scheduler", healthPort: flags.healthPort });
}

export function worker(cli: Cli, options: WorkerFlags & { healthPort?: string }) {
  return daemon(cli, (engine, signal) => runWorker(engine, signal, options), { role: "worker", healthPort: options.healthPort });
}

export function dev(cli: Cli, options: WorkerFlags & HttpFlags & { healthPort?: string; serve: boolean }) {
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
  concurrency?: string;
  grace: string;
}

/**
 * Every long-running process also runs a watchdog (freshness and "did not run" checks, alert
 * delivery; one process at a time holds its lease), so no single process is needed for alerts.
 * `role` names the process for `idem health`.
 */
export async function daemon(cli: Cli, body: (engine: Engine, signal: AbortSignal) => Promise<void>, options: { role: string; healthPort?: string }): Promise<void> {
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
  try {
    await engine.store.ensurePools(Object.entries(engine.config.pools).map(([name, slots]) => ({ name, slots })), engine.clock.now());
    const server = healthPort === undefined ? null : await serveHealth(engine, wholeNumber(healthPort, "--health-port", 1));
    const watchdog = engine.watchdog(role, log).run(stop.signal);
    try {
      await body(engine, stop.signal);
    } finally {
      stop.abort();
      await watchdog;
      server?.close();
    }
  } finally {
    await engine.store.close();
  }
}

async function runScheduler(engine: Engine, signal: AbortSignal): Promise<void> {
  const holder = `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
  let leading: boolean | null = null;
  const scheduler = new Scheduler({
    store: engine.store,
    clock: engine.clock,
    pipelines: engine.pipelines(),
    holder,
    leaseTtlMs: engine.config.schedulerLeaseMs,
    frozen: engine.config.frozen,
    log,
    onWork: () => notifyWork(engine.stateDir),
  });
  log(`scheduler ${holder}: ${engine.pipelines().length} pipeline(s)`);
  await scheduler.run(signal, {
    subscribe: (wake) => subscribeToWork(engine.store, engine.stateDir, wake),
    onTick: (tick) => {
      if (tick.leader === leading) return;
      leading = tick.leader;
      log(leading ? `scheduler ${holder} leads` : `scheduler ${holder} stands by (leader: ${tick.leaderHolder})`);
    },
  });
}

/** GET /health: 200 with who runs the checker and how fresh its last pass is, and the scheduler's lead; 503 when either is down. */
async function serveHealth(engine: Engine, port: number): Promise<Server> {
  const server = createServer((request, response) => {
    if (request.url !== "/health") {
      response.writeHead(404).end();
      return;
    }
    engine
      .health()
      .then((health) => {
        response.writeHead(health.healthy ? 200 : 503, { "content-type": "application/json" }).end(JSON.stringify(health));
      })
      .catch((error) => response.writeHead(500).end(String(error)));
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  log(`health on http://127.0.0.1:${port}/health`);
  return server;
}

async function runWorker(engine: Engine, signal: AbortSignal, flags: WorkerFlags): Promise<void> {
  const concurrency = flags.concurrency === undefined ? engine.config.concurrency : wholeNumber(flags.concurrency, "--concurrency", 1);
  const grace = wholeNumber(flags.grace, "--grace", 0);
  const worker = new Worker({
    store: engine.store,
    clock: engine.clock,
    pipelines: engine.pipelines(),
    stateDir: engine.stateDir,
    projectDir: engine.config.rootDir,
    workerId: engine.workerId,
    concurrency,
    leaseMs: engine.config.workerLeaseMs,
    frozen: engine.config.frozen, connections: engine.config.connections,
    graceMs: grace * 1000,
    limits: {
      parallelism: engine.config.parallelism,
      maxActiveTasks: Object.fromEntries(engine.pipelines().map((p) => [p.id, p.maxActiveTasks])),
    },
    log,
    onAttempt: (claim, outcome) =>
      log(`${claim.runId} ${claim.taskId} try ${claim.tryNumber}: ${outcome.taskState}${outcome.errorMessage ? ` (${outcome.errorMessage})` : ""}`),
  });
  log(`worker ${engine.workerId}: concurrency ${concurrency}`);
  await worker.run(signal);
}

export function log(line: string): void {
  process.stdout.write(`${new Date().toISOString()} ${line}\n`);
}
