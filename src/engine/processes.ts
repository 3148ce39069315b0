import type { ProcessStatus } from "./events/process-status.ts";
import { randomBytes } from "node:crypto";
import type { Prefetch } from "../core/policy/prefetch-depth.ts";
import { hostname } from "node:os";
import type { Clock } from "../core/model/clock.ts";
import type { FrozenPeriod } from "../core/policy/frozen.ts";
import type { Store } from "../store/port.ts";
import type { TaskCodeRunner } from "./executor/task-code-runner.ts";
import type { Watchdog } from "./freshness/watchdog.ts";
import type { EngineEvents } from "./events/engine-events.ts";
import type { ConnectionConfig } from "./project/config.ts";
import type { BundleCollectionSchedule } from "./project/defaults.ts";
import type { PipelineCatalog } from "./project/catalog.ts";
import { BACKFILL_ONLY_HOLDER, schedulerPresence } from "./scheduler/presence.ts";
import { Scheduler } from "./scheduler/scheduler.ts";
import type { SchedulerStart } from "./scheduler/scheduler-start.ts";
import type { SecretMasker } from "./secrets/masker.ts";
import { notifyWork, subscribeToScheduling } from "./worker/wakeup.ts";
import { Worker } from "./worker/worker.ts";

/** What the engine hands the long-running parts it builds: its store and project, as its config says. */
export interface ProcessParts {
  store: Store;
  clock: Clock;
  stateDir: string;
  projectDir: string;
  catalog: PipelineCatalog;
  /** The project's own frozen periods (each pipeline adds its own). */
  frozen: readonly FrozenPeriod[];
  connections: Record<string, ConnectionConfig>;
  masker: SecretMasker;
  withheldEnv: readonly string[];
  workerId: string;
  settings: ProcessSettings;
  taskRunner(size: number): TaskCodeRunner;
  warmTaskHosts(count: number): void;
  watchdog(role: string): Watchdog;
  /** Where the scheduler, workers and the long-lived frame tell what they do (logs, metrics, traces listen). */
  events: EngineEvents;
  /** Counts a running part in the process's status (`Engine.processStatus()`); returns the function that takes it out. */
  live(part: { status(): ProcessStatus }): () => void;
  /** Whether this process's own scheduler has yet to try the lead (its watchdog waits for it). */
  schedulerStart: SchedulerStart;
}

/** The config's numbers for the scheduler and workers (`idem.config.ts`, defaults in config.ts). */
export interface ProcessSettings {
  /** Attempts a worker (and `idem run`) runs at once. */
  concurrency: number;
  /** Attempts a worker claims ahead of its free slots (`prefetch`); 0: none; "auto": core's prefetchDepth. */
  prefetch: Prefetch;
  /** Task instances running at once across all workers; undefined: no limit beyond the workers'. */
  parallelism: number | undefined;
  workerLeaseMs: number;
  schedulerLeaseMs: number;
  /** How often long-running processes look at the pipeline files; null: never (pipelines built in memory). */
  reloadMs: number | null;
  logMaxBytes: number | null;
  /** Pools created when missing, at open and at each long-running process's start. */
  pools: Readonly<Record<string, number>>;
  /** When the leading scheduler collects old bundles; null: only by hand. */
  bundleCollection: BundleCollectionSchedule | null;
}

export interface WorkerRequest {
  /** Attempts at once; default the config's concurrency. */
  concurrency?: number;
  /** Attempts claimed ahead of free slots, or "auto"; default the config's prefetch. */
  prefetch?: Prefetch;
  /** On stop, how long running attempts may finish before they are handed back. */
  graceMs?: number;
  /** Work on this backfill's runs only. */
  backfillId?: string;
}

/** A scheduler as the config says; `backfillsOnly` advances backfills and creates no scheduled run. */
export function buildScheduler(parts: ProcessParts, holder: string, options: { backfillsOnly?: boolean }): Scheduler {
  return new Scheduler({
    store: parts.store,
    clock: parts.clock,
    pipelines: parts.catalog.pipelines(),
    catalog: parts.catalog,
    holder,
    leaseTtlMs: parts.settings.schedulerLeaseMs,
    frozen: parts.frozen,
    onWork: () => notifyWork(parts.stateDir),
    ...(options.backfillsOnly ? { scope: "backfills" as const } : { bundleCollection: parts.settings.bundleCollection }),
    events: parts.events,
    onLeadChange: () => parts.schedulerStart.tried(),
  });
}

/** A worker as the config says: task hosts, lease, limits, each pipeline's cap as its file says now. */
export function buildWorker(parts: ProcessParts, request: WorkerRequest): Worker {
  const { settings, catalog } = parts;
  const concurrency = request.concurrency ?? settings.concurrency;
  return new Worker({
    store: parts.store,
    clock: parts.clock,
    pipelines: catalog.pipelines(),
    // A host started after a pipeline file changed finds a new version: the catalog is reloaded then.
    catalog,
    // Task code runs in task hosts, never in the worker's loop.
    runner: parts.taskRunner(concurrency),
    logMaxBytes: settings.logMaxBytes,
    masker: parts.masker,
    withheldEnv: parts.withheldEnv,
    stateDir: parts.stateDir,
    projectDir: parts.projectDir,
    workerId: parts.workerId,
    concurrency,
    prefetch: request.prefetch ?? settings.prefetch,
    leaseMs: settings.workerLeaseMs,
    frozen: parts.frozen,
    connections: parts.connections,
    ...(request.graceMs === undefined ? {} : { graceMs: request.graceMs }),
    ...(request.backfillId === undefined ? {} : { backfillId: request.backfillId }),
    limits: {
      parallelism: settings.parallelism,
      get maxActiveTasks() {
        return Object.fromEntries(catalog.pipelines().map((p) => [p.id, p.maxActiveTasks]));
      },
    },
    events: parts.events,
  });
}

/** Runs this process's scheduler until `signal`: it leads or stands by under the leader lease. */
export async function runScheduler(parts: ProcessParts, signal: AbortSignal): Promise<void> {
  const holder = `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
  const scheduler = buildScheduler(parts, holder, {});
  parts.events.emit("scheduler:started", { holder, pipelines: parts.catalog.pipelines().length });
  await whileLive(parts, scheduler, () => scheduler.run(signal, { subscribe: (wake) => subscribeToScheduling(parts.store, parts.stateDir, wake) }));
}

/** Runs a worker until `signal`, then lets running attempts finish for the grace period. */
export async function runWorker(parts: ProcessParts, signal: AbortSignal, request: WorkerRequest): Promise<void> {
  const worker = buildWorker(parts, request);
  const prefetch = request.prefetch ?? parts.settings.prefetch;
  parts.events.emit("worker:started", { workerId: parts.workerId, concurrency: request.concurrency ?? parts.settings.concurrency, prefetch });
  parts.warmTaskHosts(1);
  await whileLive(parts, worker, () => worker.run(signal));
}

async function whileLive(parts: ProcessParts, part: { status(): ProcessStatus }, body: () => Promise<void>): Promise<void> {
  const gone = parts.live(part);
  try {
    await body();
  } finally {
    gone();
  }
}

/**
 * With no live scheduler, runs the backfill here: a scheduler that advances backfills only and a
 * worker on this backfill's runs, until `signal`; `done` settles when both have stopped. Null
 * when a scheduler is live: it runs the backfill.
 */
export async function runBackfillHere(parts: ProcessParts, backfillId: string, maxActiveRuns: number, signal: AbortSignal): Promise<{ done: Promise<void> } | null> {
  if ((await schedulerPresence(parts.store, parts.clock.now())).live) return null;
  const scheduler = buildScheduler(parts, `${BACKFILL_ONLY_HOLDER}${parts.workerId}`, { backfillsOnly: true });
  const worker = buildWorker(parts, { backfillId, concurrency: Math.max(parts.settings.concurrency, maxActiveRuns), graceMs: 5_000 });
  const running = [
    scheduler.run(signal, { subscribe: (wake) => subscribeToScheduling(parts.store, parts.stateDir, wake) }),
    worker.run(signal),
  ];
  // Wrapped: an async function returning the promise itself would wait for it.
  return { done: Promise.allSettled(running).then(() => undefined) };
}

export interface LongLivedOptions {
  /** The body starts a scheduler: the watchdog does not call the scheduler down before it first tries to lead. */
  startsScheduler?: boolean;
}

/**
 * The frame of every long-running process (scheduler, worker, `idem serve`, `idem dev`): pools
 * the config names exist, pipeline files are looked at every `reloadMs`, and a watchdog runs
 * (one process at a time holds its lease), all while `body` runs and until `signal`.
 */
export async function runLongLived(
  parts: ProcessParts, role: string, signal: AbortSignal, body: () => Promise<void>, options: LongLivedOptions = {},
): Promise<void> {
  if (options.startsScheduler) parts.schedulerStart.expect();
  for (const broken of parts.catalog.brokenFiles()) parts.events.emit("pipeline-file:broken", { message: broken.message });
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  signal.addEventListener("abort", onAbort, { once: true });
  if (signal.aborted) stop.abort();
  const reloading = watchPipelineFiles(parts, stop.signal);
  try {
    await parts.store.ensurePools(Object.entries(parts.settings.pools).map(([name, slots]) => ({ name, slots })), parts.clock.now());
    const watchdog = parts.watchdog(role);
    const running = whileLive(parts, watchdog, () => watchdog.run(stop.signal));
    try {
      await body();
    } finally {
      stop.abort();
      await running;
    }
  } finally {
    stop.abort();
    signal.removeEventListener("abort", onAbort);
    await reloading;
  }
}

/**
 * Looks at the pipeline files every `reloadMs`: added, changed and removed files take effect
 * without a restart. A file that breaks stops only its own pipelines, and says so (`pipeline-file:broken`).
 */
async function watchPipelineFiles(parts: ProcessParts, signal: AbortSignal): Promise<void> {
  const { catalog, clock, events } = parts;
  const every = parts.settings.reloadMs;
  if (every === null) return;
  let broken = new Set(catalog.brokenFiles().map((b) => b.message));
  while (!signal.aborted) {
    await clock.sleep(every, signal);
    if (signal.aborted) break;
    const before = new Map(catalog.pipelines().map((p) => [p.id, p.version]));
    let changed: boolean;
    try {
      changed = await catalog.refresh();
    } catch (error) {
      events.emit("pipelines:reload-failed", { error: (error as Error).message });
      continue;
    }
    if (!changed) continue;
    const after = new Map(catalog.pipelines().map((p) => [p.id, p.version]));
    const added = [...after.keys()].filter((id) => !before.has(id));
    const removed = [...before.keys()].filter((id) => !after.has(id));
    const updated = [...after.keys()].filter((id) => before.has(id) && before.get(id) !== after.get(id));
    events.emit("pipelines:reloaded", { pipelines: after.size, added, changed: updated, removed });
    const now = new Set(catalog.brokenFiles().map((b) => b.message));
    for (const message of now) if (!broken.has(message)) events.emit("pipeline-file:broken", { message });
    for (const message of broken) if (!now.has(message)) events.emit("pipeline-file:fixed", { file: message.split(":")[0]! });
    broken = now;
  }
}
