import { existsSync, readFileSync } from "node:fs";
import { open, type FileHandle } from "node:fs/promises";
import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import type { Clock } from "../core/model/clock.ts";
import type { Prefetch } from "../core/policy/prefetch-depth.ts";
import { ArgumentError, ConflictError, DefinitionError, NotFoundError, UsageError } from "../core/model/errors.ts";
import type { Params, Pipeline } from "../core/pipeline/types.ts";
import { assertDeclaredParams } from "../core/pipeline/params.ts";
import { formatInstant, parseBusinessDate, parseInstant } from "../core/time/dates.ts";
import { isValidId } from "../core/model/ids.ts";
import type { Interval } from "../core/time/interval.ts";
import { SeveralIntervalsOnDate } from "../core/time/base.ts";
import type { Due } from "../core/time/timetable.ts";
import type {
  AttemptRecord, AuditEntry, BackfillProgress, Incident, BackfillRecord, ClaimedAttempt, PipelineState, PoolUsage,
  RunRecord, Store, TaskInstanceRecord, BackfillItem, TokenRole, DatasetEvent, WatermarkRecord, WorkerRecord,
} from "../store/port.ts";
import type { RunState, TriggerKind } from "../core/model/states.ts";
import { ApiTokens, type TokenInfo } from "./tokens.ts";
import { Pages, type Page } from "./pages.ts";
import { Backfills, type BackfillPlan, type BackfillRequest } from "./backfills.ts";
export type { BackfillPlan, BackfillRequest } from "./backfills.ts";
import { defaultActor, tellAudit, type Acting } from "./acting.ts";

export type { Acting } from "./acting.ts";
export { defaultActor } from "./acting.ts";
export type { Page } from "./pages.ts";
export type { TokenInfo } from "./tokens.ts";
import { ChangeFeed } from "./changes/change-feed.ts";
import { refusalsTranslated } from "./records/store-refusals.ts";
import type { AlertRecord, AlertState, TaskStateCell } from "../store/port.ts";
import { expectedRuns, recentIntervalsFrom, type ExpectedRun } from "./scheduler/ledger.ts";
import { Watchdog } from "./freshness/watchdog.ts";
import { explainRun } from "./why.ts";
import { assertIntervalEnded } from "./manual-runs.ts";
import { estimateRestatement, type RestateEstimate } from "./backfill/restate-estimate.ts";
import { notifyScheduler, notifyWork } from "./worker/wakeup.ts";
import { datasetWebhookRefusal, emitDatasetEvent, type DatasetEventRequest, type EmittedDatasetEvent, type WebhookRefusal } from "./external-events.ts";
export type { DatasetEventRequest, EmittedDatasetEvent, WebhookRefusal } from "./external-events.ts";
import { checkerHealth, freshnessReport, type CheckerHealth, type FreshnessReport } from "./freshness/report.ts";
import { describeFrozen, frozenPeriodOf, type FrozenPeriod } from "../core/policy/frozen.ts";
import { reachable } from "../core/graph/dag.ts";
import { newRun, saveVersion, taskInstancesOf } from "./records/pipeline-records.ts";
import { FROZEN_CHANGE_ACTION, recordFrozenPeriods } from "./records/frozen-records.ts";
import type { ConnectionConfig, NotifierConfig, ResolvedDatasetWebhook } from "./project/config.ts";
import { AlertDispatcher } from "./freshness/alert-dispatcher.ts";
import { missingNotifierVariable } from "./freshness/notifiers/index.ts";
import type { AlertRoute } from "../core/policy/alert-routing.ts";
import type { DigestPolicy, FailingPolicy } from "../core/policy/alert-delivery.ts";
import { PipelineCatalog, type BrokenFile } from "./project/catalog.ts";
import { TaskHostPool } from "./task-host/pool.ts";
import { taskProcessEnvironment, withheldVariables } from "./executor/command-env.ts";
import type { TaskCodeRunner } from "./executor/task-code-runner.ts";
import { hostedRunner } from "./task-host/hosted-runner.ts";
import { SecretMasker } from "./secrets/masker.ts";
import type { LongLivedOptions, ProcessParts, ProcessSettings, WorkerRequest } from "./processes.ts";
import { SchedulerStart } from "./scheduler/scheduler-start.ts";
import { IncidentActions, type IncidentAcknowledgeRequest, type IncidentView } from "./incidents.ts";
export type { IncidentView } from "./incidents.ts";
import { attemptEndedFact, ProcessFactsHub } from "./metrics/process-facts.ts";
import { RunTraces } from "./tracing/run-traces.ts";
import { tracingEnabled } from "./tracing/trace-ids.ts";
import { storeFacts, WORKER_ALIVE_MS, type StoreFacts } from "./metrics/store-facts.ts";
import type { EngineMetrics } from "./metrics/prometheus.ts";
import { DEFAULTS } from "./project/defaults.ts";

export interface EngineOptions {
  store: Store;
  /** The engine opened the store (`openProject`): `close()` closes it too. */
  ownsStore?: boolean;
  clock: Clock;
  stateDir: string;
  /**
   * The project's pipelines. Absent for a surface that only reads the state store (and so never
   * runs the user's pipeline files): reads by pipeline id then take the id as given.
   */
  pipelines?: readonly Pipeline[];
  /** Where command tasks run when they name no cwd. */
  projectDir?: string;
  random?: () => number;
  /** Frozen periods for every pipeline of the project (each pipeline may add its own). */
  frozen?: readonly FrozenPeriod[];
  /** The project's named connections, for SQL tasks and `ctx.connection(name)`. */
  connections?: Record<string, ConnectionConfig>;
  /** The pipelines as their files say now, with the files that did not load; overrides `pipelines`. */
  catalog?: PipelineCatalog;
  /** Task hosts: how much memory each may use. Only pipelines loaded from files run in them. */
  taskMemoryMb?: number;
  /** The cap of one attempt's log; null: none. */
  logMaxBytes?: number | null;
  /** Secret values: masked in attempt logs, results, incidents, alerts and the audit log. */
  secrets?: readonly string[];
  /** A worker (and `idem run`) that has not renewed an attempt's lease for this long is presumed dead. */
  workerLeaseMs?: number;
  /** How the watchdog (freshness and "did not run" checks, alerts) runs in this project. */
  watch?: WatchSettings;
  /** Where the state store is (a file or a URL): task processes do not see it or its password. */
  stateUrl?: string;
  /** Attempts a worker and `runInterval` run at once. Default 4. */
  concurrency?: number;
  /** Attempts a worker claims ahead of its free slots, or "auto" (core's prefetchDepth). Default "auto". */
  prefetch?: Prefetch;
  /** Task instances running at once across all workers. Default: no limit beyond the workers'. */
  parallelism?: number;
  /** A scheduler that has not renewed the leader lease for this long is replaced. Default 15 s. */
  schedulerLeaseMs?: number;
  /** How often long-running processes and `runInterval` look at the pipeline files. Default: never (pipelines in memory). */
  reloadMs?: number;
  /** Pools created when missing, by each long-running process at its start. */
  pools?: Readonly<Record<string, number>>;
  /** The signed dataset webhook (`datasetWebhook` in idem.config.ts); absent: none. */
  datasetWebhook?: ResolvedDatasetWebhook | null;
}

export interface WatchSettings {
  notifiers?: Readonly<Record<string, NotifierConfig>>;
  /** Who hears of incidents neither a promise nor a route names notifiers for. */
  defaultNotify?: readonly string[];
  /** Rules choosing notifiers by pipeline, dataset, owner, severity and kind. */
  routes?: readonly AlertRoute[];
  /** Bursts to one notifier become one digest; null: never. Default 5 messages per 60 s. */
  digest?: DigestPolicy | null;
  /** When a notifier that keeps failing is an incident. Default 3 failures in a row or 10 minutes. */
  failing?: FailingPolicy;
  /** The UI's address, for links in alerts. */
  uiUrl?: string | null;
  /** The config file, named when a notifier's variable is missing. */
  configFile?: string | null;
  /** How often the checker passes. Default 15 s. */
  intervalMs?: number;
  /** The "did not run" and "scheduler down" grace. Default 10 minutes. */
  graceMs?: number;
  /** The checker counts as dead when its last pass is older than this. Default 60 s. */
  staleMs?: number;
}

export interface RunRequest {
  /** Who asked: a flag, else IDEM_USER, else the OS user. */
  actor?: string;
  reason?: string;
  /** Overrides of the pipeline's params for this run. */
  params?: Params;
  concurrency?: number;
  /** Run a frozen business date anyway; the reason is recorded. */
  openFrozen?: string;
  cancel?: AbortSignal;
  onAttempt?: (claim: ClaimedAttempt, outcome: { taskState: string | null; errorMessage: string | null }) => void;
  /** Look at the pipeline files this often while the run runs, as workers do (`reloadMs`). */
  reloadMs?: number;
}

export interface Health {
  /** "ok"; "degraded" when pipeline files did not load; the checker's status when it is not alive. */
  status: "ok" | "degraded" | CheckerHealth["status"];
  checker: CheckerHealth;
  brokenFiles: BrokenFile[];
}

export interface RunResult {
  run: RunRecord;
  /** False when the run already existed and was run again. */
  created: boolean;
  tasks: TaskInstanceRecord[];
}

/**
 * What every surface (CLI, HTTP, UI) calls. It translates intentions into store operations and
 * executions; it never reads the wall clock itself.
 */
export class Engine {
  readonly store: Store;
  readonly clock: Clock;
  readonly stateDir: string;
  readonly catalog: PipelineCatalog;
  readonly #pipelinesLoaded: boolean;
  readonly #projectDir: string;
  readonly #options: EngineOptions;
  #pool: TaskHostPool | null = null;
  /** What this process's scheduler and workers measure of their own work (the metrics listen). */
  readonly facts = new ProcessFactsHub();
  /** Spans of the runs this process ends and the attempts it records: only with an OTLP endpoint set. */
  readonly #traces: RunTraces | null;
  #metrics: Promise<EngineMetrics> | null = null;
  readonly #random: () => number;
  readonly #frozen: readonly FrozenPeriod[];
  readonly connections: Record<string, ConnectionConfig>;
  readonly #watch: WatchSettings;
  readonly workerId: string;
  readonly masker: SecretMasker;
  /** Variables of this process that task processes do not inherit (see command-env.ts). */
  readonly withheldEnv: readonly string[];
  #changeFeed: ChangeFeed | null = null;
  readonly #tokens: ApiTokens;
  readonly #pages: Pages;
  readonly #backfills: Backfills;
  readonly #schedulerStart = new SchedulerStart();
  readonly #incidents: IncidentActions;

  constructor(options: EngineOptions) {
    this.masker = new SecretMasker(options.secrets ?? []);
    this.#traces = tracingEnabled(process.env) ? new RunTraces((runId) => this.store.getRun(runId)) : null;
    if (this.#traces) this.facts.subscribe(this.#traces);
    this.withheldEnv = withheldVariables(process.env, options.stateUrl ?? null);
    this.store = options.store;
    this.clock = options.clock;
    this.stateDir = options.stateDir;
    this.catalog = options.catalog ?? PipelineCatalog.of(options.pipelines ?? []);
    this.#pipelinesLoaded = options.pipelines !== undefined || options.catalog !== undefined;
    this.#options = options;
    this.#projectDir = options.projectDir ?? process.cwd();
    this.#random = options.random ?? Math.random;
    this.#frozen = options.frozen ?? [];
    this.connections = options.connections ?? {};
    this.#watch = options.watch ?? {};
    this.workerId = `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
    this.#tokens = new ApiTokens(this.store, this.clock);
    this.#pages = new Pages(this.store, (id) => this.pipeline(id));
    this.#incidents = new IncidentActions(this.store, this.clock);
    this.#backfills = new Backfills({
      store: this.store,
      clock: this.clock,
      pipeline: (id) => this.pipeline(id),
      frozenPeriods: (id) => this.frozenPeriods(id),
      recordVersion: async (pipeline, actor, at) => {
        await saveVersion(this.store, pipeline, at, actor);
        await this.#recordProjectFrozen(actor, at);
      },
      audit: (...entry) => this.#audit(...entry),
      announce: () => this.#announce(),
    });
  }

  pipelines(): Pipeline[] {
    return this.catalog.pipelines();
  }

  pipeline(id: string): Pipeline {
    const found = this.catalog.get(id);
    if (!found) {
      const known = this.catalog.pipelines().map((p) => p.id);
      const broken = this.catalog.brokenFiles();
      throw new NotFoundError(
        "pipeline",
        `unknown pipeline "${id}"` + (known.length ? ` (known: ${known.join(", ")})` : " (no pipelines loaded)") +
          (broken.length ? `; ${broken.length} pipeline file(s) did not load: ${broken.map((b) => b.message).join("; ")}` : ""),
      );
    }
    return found;
  }

  /** Pipeline files that did not load (file, line, message): for health reports and logs. */
  brokenFiles(): BrokenFile[] {
    return this.catalog.brokenFiles();
  }

  /**
   * Where task code runs: long-lived task hosts for pipelines loaded from files (started on
   * first use, at most `size`), this process for pipelines that exist only in memory.
   */
  taskRunner(size: number): TaskCodeRunner {
    if (!this.#pool) {
      this.#pool = new TaskHostPool({
        size,
        cwd: this.#projectDir,
        env: taskProcessEnvironment(process.env, this.withheldEnv),
        memoryMb: this.#options.taskMemoryMb,
        logMaxBytes: this.#options.logMaxBytes ?? null,
        secrets: this.#options.secrets ?? [],
        preload: () => this.catalog.pipelines().map((p) => this.catalog.fileOf(p.id)).filter((f): f is string => !!f),
      });
      const pool = this.#pool;
      this.catalog.onChange(() => pool.retire());
    }
    return hostedRunner(this.#pool, (id) => this.catalog.fileOf(id));
  }

  /** Starts task hosts ahead of the first attempt (after taskRunner). */
  warmTaskHosts(count: number): void {
    if (this.catalog.pipelines().some((p) => this.catalog.fileOf(p.id))) this.#pool?.warm(count);
  }

  /** Ends the task hosts (they would end with this process anyway), and the store when the engine opened it. */
  async close(): Promise<void> {
    await this.#metrics?.then((metrics) => metrics.close(), () => undefined);
    await this.#traces?.shutdown();
    await this.#pool?.close();
    this.#pool = null;
    if (this.#options.ownsStore) await this.store.close();
  }

  // --- the long-running processes, built from the engine's config ---------------------------

  /** The config's numbers for the scheduler and workers. */
  get settings(): ProcessSettings {
    const o = this.#options;
    return {
      concurrency: o.concurrency ?? DEFAULTS.concurrency, prefetch: o.prefetch ?? "auto", parallelism: o.parallelism, workerLeaseMs: o.workerLeaseMs ?? DEFAULTS.workerLeaseMs,
      schedulerLeaseMs: o.schedulerLeaseMs ?? DEFAULTS.schedulerLeaseMs, reloadMs: o.reloadMs ?? null, logMaxBytes: o.logMaxBytes ?? null, pools: o.pools ?? {},
    };
  }

  /**
   * Runs `body` as a long-lived process in the role given (scheduler, worker, serve, dev), until
   * `signal`: the config's pools exist, pipeline files are reloaded every `reloadMs`, a watchdog runs.
   */
  async runLongLived(role: string, signal: AbortSignal, body: () => Promise<void>, log: (line: string) => void, options: LongLivedOptions = {}): Promise<void> {
    const { runLongLived } = await import("./processes.ts");
    await runLongLived(this.#processParts(), role, signal, body, log, options);
  }

  /** Runs this process's scheduler until `signal`: it leads, or stands by while another leads. */
  async runScheduler(signal: AbortSignal, log?: (line: string) => void): Promise<void> {
    const { runScheduler } = await import("./processes.ts");
    await runScheduler(this.#processParts(), signal, log);
  }

  /** Runs a worker as the config says (flags may override concurrency and grace) until `signal`. */
  async runWorker(signal: AbortSignal, request: WorkerRequest = {}): Promise<void> {
    const { runWorker } = await import("./processes.ts");
    await runWorker(this.#processParts(), signal, request);
  }

  /**
   * With no live scheduler, runs the backfill in this process (a scheduler for backfills only and
   * a worker on its runs) until `signal`; `done` settles when they have stopped. Null when a
   * scheduler is live: it runs the backfill.
   */
  async runBackfillHere(backfillId: string, maxActiveRuns: number, signal: AbortSignal): Promise<{ done: Promise<void> } | null> {
    const { runBackfillHere } = await import("./processes.ts");
    return runBackfillHere(this.#processParts(), backfillId, maxActiveRuns, signal);
  }

  #processParts(): ProcessParts {
    return {
      store: this.store, clock: this.clock, stateDir: this.stateDir, projectDir: this.#projectDir, catalog: this.catalog,
      frozen: this.#frozen, connections: this.connections, masker: this.masker, withheldEnv: this.withheldEnv, workerId: this.workerId,
      settings: this.settings,
      taskRunner: (size) => this.taskRunner(size),
      warmTaskHosts: (count) => this.warmTaskHosts(count),
      watchdog: (role, log) => this.watchdog(role, log),
      facts: this.facts,
      schedulerStart: this.#schedulerStart,
    };
  }

  /** The installation's durable facts, read from the store now: what /metrics shows of it. */
  async storeFacts(): Promise<StoreFacts> {
    return storeFacts(this.store, this.pipelines(), this.clock.now());
  }

  /**
   * This process's metrics (Prometheus' text format): the store's facts as of each scrape, and
   * what this process measured since the first call. The metrics library loads then: a process
   * that serves /metrics calls this when it starts, so its measures cover its whole life.
   */
  metrics(): Promise<EngineMetrics> {
    this.#metrics ??= import("./metrics/prometheus.ts").then(({ prometheusMetrics }) =>
      prometheusMetrics({ facts: this.facts, storeFacts: () => this.storeFacts(), taskHostsAlive: () => this.#pool?.size ?? 0 }),
    );
    return this.#metrics;
  }

  /** The interval a business date names under the pipeline's schedule. */
  intervalForDate(pipelineId: string, date: string): Interval {
    const pipeline = this.pipeline(pipelineId);
    let businessDate: string;
    try {
      businessDate = parseBusinessDate(date);
    } catch (error) {
      throw new ArgumentError("date", () => (error as Error).message, { pipeline: pipelineId });
    }
    try {
      return pipeline.schedule.intervalForDate(businessDate);
    } catch (error) {
      if (error instanceof SeveralIntervalsOnDate) {
        const { schedule, count } = error;
        throw new ArgumentError("date", (n) => `${schedule}: ${count} intervals start on ${businessDate}; give ${n("start")} and ${n("end")} instead of ${n("date")}`, { pipeline: pipelineId });
      }
      throw new ArgumentError("date", () => (error as Error).message, { pipeline: pipelineId });
    }
  }

  /** An interval given by its bounds (for schedules that are not daily). */
  intervalBetween(pipelineId: string, start: string, end: string): Interval {
    const pipeline = this.pipeline(pipelineId);
    const tz = pipeline.schedule.timezone;
    let startMs: number;
    let endMs: number;
    try {
      startMs = parseInstant(start, tz);
      endMs = parseInstant(end, tz);
    } catch (error) {
      throw new UsageError((error as Error).message, { pipeline: pipelineId });
    }
    if (endMs <= startMs) throw new ArgumentError("end", (n) => `${n("end")} ${end} is not after ${n("start")} ${start}`, { pipeline: pipelineId });
    const atStart = pipeline.schedule.intervalAt(startMs);
    if (pipeline.schedule.kind !== "manual" && (atStart.start !== startMs || atStart.end !== endMs)) {
      throw new UsageError(
        `${start}..${end} is not an interval of the schedule (${pipeline.schedule.describe()}); the interval there is ` +
          `${new Date(atStart.start).toISOString()}..${new Date(atStart.end).toISOString()}`,
        { pipeline: pipelineId },
      );
    }
    return { ...atStart, start: startMs, end: endMs };
  }

  /**
   * Runs the pipeline for one interval in this process and waits for the end. The first call
   * creates the run; a later call for the same interval runs that same run again.
   */
  async runInterval(pipelineId: string, interval: Interval, request: RunRequest = {}): Promise<RunResult> {
    const pipeline = this.pipeline(pipelineId);
    assertDeclaredParams(pipeline, request.params);
    this.#assertOwned(pipeline, interval);
    const now = this.clock.now();
    assertIntervalEnded(pipeline, interval, now);
    this.#assertNotFrozen(pipeline, interval.businessDate, request.openFrozen);
    const actor = request.actor ?? defaultActor();
    await saveVersion(this.store, pipeline, now, actor);
    await this.#recordProjectFrozen(actor, now);
    const params = request.params ?? {};
    const { run, created } = await this.store.createRunIfAbsent(newRun(pipeline, interval, { trigger: "manual", triggeredBy: actor, reason: request.reason ?? null, params }, now));
    if (!created) {
      // A previous `idem run` of this run killed on this host left attempts no one renews: they are lost now, not in a lease.
      const { recoverDeadHolders } = await import("./worker/dead-holders.ts");
      await recoverDeadHolders(this.store, now, { runId: run.runId });
      await refusalsTranslated(
        () => this.store.rerun({ runId: run.runId, graphVersion: pipeline.version, tasks: taskInstancesOf(pipeline), params, at: now, resume: run.state === "queued" || run.state === "running" }),
        { pipeline: pipelineId },
      );
    }
    await this.store.appendAudit({
      at: now,
      actor,
      action: created ? "trigger" : "rerun",
      pipelineId: pipeline.id,
      runId: run.runId,
      reason: request.reason ?? null,
      graphVersion: pipeline.version,
      details: { businessDate: interval.businessDate, params, ...(request.openFrozen ? { openFrozen: request.openFrozen } : {}) },
    });
    // the executor loads only for a command that runs an interval (`idem run`), not for every engine
    const { executeRun } = await import("./worker/execute-run.ts");
    // Like a worker: each attempt runs the task's code as its file says when it starts.
    const reloadMs = request.reloadMs ?? this.#options.reloadMs;
    const reload = reloadMs ? setInterval(() => void this.catalog.refresh().catch(() => {}), reloadMs) : null;
    const finished = await executeRun({
      store: this.store,
      pipeline,
      catalog: this.catalog,
      runId: run.runId,
      clock: this.clock,
      stateDir: this.stateDir,
      workerId: this.workerId,
      concurrency: request.concurrency ?? this.settings.concurrency,
      leaseMs: this.#options.workerLeaseMs,
      defaultCwd: this.#projectDir,
      cancel: request.cancel,
      random: this.#random,
      frozen: this.#frozen,
      connections: this.connections,
      onAttempt: (claim, outcome) => {
        this.facts.attemptEnded(attemptEndedFact(claim, outcome));
        request.onAttempt?.(claim, outcome);
      },
      runner: this.taskRunner(request.concurrency ?? this.settings.concurrency),
      logMaxBytes: this.#options.logMaxBytes,
      masker: this.masker,
      withheldEnv: this.withheldEnv,
    }).finally(() => reload && clearInterval(reload));
    return { run: finished, created, tasks: inTaskOrder(pipeline, await this.store.listTaskInstances(run.runId)) };
  }

  async runForDate(pipelineId: string, date: string, request: RunRequest = {}): Promise<RunResult> {
    return this.runInterval(pipelineId, this.intervalForDate(pipelineId, date), request);
  }

  async runs(pipelineId: string, limit = 50): Promise<RunRecord[]> {
    if (this.#pipelinesLoaded) this.pipeline(pipelineId);
    return this.store.listRuns({ pipelineId, limit });
  }

  async run(runId: string): Promise<RunRecord> {
    const run = await this.store.getRun(runId);
    if (!run) throw new NotFoundError("run", `unknown run "${runId}" (run ids look like shop_orders@2026-09-01)`);
    return run;
  }

  /** A run's task instances, in the pipeline's task order when the pipeline is loaded. */
  async taskInstances(runId: string): Promise<TaskInstanceRecord[]> {
    const run = await this.run(runId);
    const tasks = await this.store.listTaskInstances(runId);
    const pipeline = this.catalog.get(run.pipelineId);
    return pipeline ? inTaskOrder(pipeline, tasks) : tasks;
  }

  async attempts(runId: string, taskId?: string): Promise<AttemptRecord[]> {
    await this.run(runId);
    return this.store.listAttempts(runId, taskId);
  }

  /** The log of one attempt (the given try, or the latest) as text: for small logs and tests. */
  async log(runId: string, taskId: string, tryNumber?: number): Promise<{ attempt: AttemptRecord; text: string }> {
    const { attempt } = await this.logOf(runId, taskId, tryNumber);
    return { attempt, text: existsSync(attempt.logPath) ? readFileSync(attempt.logPath, "utf8") : "" };
  }

  /** Which attempt's log to show (the given try, or the latest), and where it is. */
  async logOf(runId: string, taskId: string, tryNumber?: number): Promise<{ attempt: AttemptRecord; path: string }> {
    const attempts = await this.attempts(runId, taskId);
    if (attempts.length === 0) {
      const tasks = await this.store.listTaskInstances(runId);
      if (!tasks.some((t) => t.taskId === taskId)) throw new NotFoundError("task", `run ${runId} has no task "${taskId}"`);
      throw new NotFoundError("attempt", `task ${taskId} of run ${runId} has not run yet`);
    }
    const attempt = tryNumber === undefined ? attempts.at(-1)! : attempts.find((a) => a.tryNumber === tryNumber);
    if (!attempt) {
      throw new NotFoundError("attempt", `task ${taskId} of run ${runId} has no try ${tryNumber} (tries: ${attempts.map((a) => a.tryNumber).join(", ")})`);
    }
    return { attempt, path: attempt.logPath };
  }

  /** Whether an attempt is still running: `idem logs --follow` reads on while it is. */
  async attemptRunning(runId: string, taskId: string, attemptId: number): Promise<boolean> {
    const attempts = await this.store.listAttempts(runId, taskId);
    return attempts.find((a) => a.attemptId === attemptId)?.state === "running";
  }

  /** The next `count` runs the schedule will create after now. */
  /** What a scheduler starting now will do for each pipeline, one line each: catch-up and next fire (`scheduler/outlook.ts`). */
  async schedulerOutlook(): Promise<string[]> {
    const { schedulerOutlook } = await import("./scheduler/outlook.ts");
    const env = { store: this.store, preview: (id: string, n: number) => this.preview(id, n), frozenPeriods: (id: string) => this.frozenPeriods(id) };
    return schedulerOutlook(env, this.catalog.pipelines(), this.clock.now());
  }

  preview(pipelineId: string, count: number): Due[] {
    const pipeline = this.pipeline(pipelineId);
    const from = Math.max(this.clock.now(), pipeline.start === null ? -Infinity : pipeline.start - 1);
    // The interval containing start - 1 ends after start: it fires after `from`, but is not owned.
    const owned = (d: Due) => (pipeline.start === null || d.interval.start >= pipeline.start) && (pipeline.end === null || d.interval.start < pipeline.end);
    return pipeline.schedule.preview(from, count + 1).filter(owned).slice(0, count);
  }

  /** What the pipeline's `restate` window adds to each scheduled interval, from recent durations; null without one. */
  async restateEstimate(pipelineId: string): Promise<RestateEstimate | null> {
    const pipeline = this.pipeline(pipelineId);
    if (!pipeline.restate) return null;
    const pools = new Map((await this.store.listPools()).map((p) => [p.name, p.slots]));
    return estimateRestatement(pipeline, await this.store.taskDurations(pipeline.id, 100), pools);
  }

  /**
   * A manual action changed work or scheduling: the workers and the scheduler of this state
   * directory look now (a run or backfill to start, a run ended by hand) instead of at their
   * next poll or tick. PostgreSQL stores also notify every machine from the writes themselves.
   */
  #announce(): void {
    notifyWork(this.stateDir);
    notifyScheduler(this.stateDir);
  }

  async pause(pipelineId: string, request: { note?: string } & Acting = {}): Promise<PipelineState> {
    return this.#setPaused(pipelineId, true, request);
  }

  async unpause(pipelineId: string, request: { note?: string } & Acting = {}): Promise<PipelineState> {
    return this.#setPaused(pipelineId, false, request);
  }

  async #setPaused(pipelineId: string, paused: boolean, request: { note?: string } & Acting): Promise<PipelineState> {
    const pipeline = this.pipeline(pipelineId);
    const actor = request.actor ?? defaultActor();
    const at = this.clock.now();
    const state = await this.store.setPaused({ pipelineId, paused, note: request.note ?? null, actor, at });
    notifyScheduler(this.stateDir);
    tellAudit(request, await this.store.appendAudit({
      at, actor, action: paused ? "pause" : "unpause", pipelineId, reason: request.note ?? null, graphVersion: pipeline.version,
    }));
    return state;
  }

  /** The ledger of expected runs over [from, to), default the last `limit` intervals that fired. */
  async expected(pipelineId: string, range: { from?: string; to?: string; limit?: number } = {}): Promise<ExpectedRun[]> {
    const pipeline = this.pipeline(pipelineId);
    const now = this.clock.now();
    const tz = pipeline.schedule.timezone;
    const parse = (value: string, argument: "from" | "to") => {
      try {
        return parseInstant(value, tz);
      } catch (error) {
        throw new ArgumentError(argument, (n) => `${n(argument)}: ${(error as Error).message}`, { pipeline: pipelineId });
      }
    };
    const to = range.to ? parse(range.to, "to") : (pipeline.schedule.nextDue(now)?.interval.start ?? now);
    const from = range.from ? parse(range.from, "from") : recentIntervalsFrom(pipeline, to, pipeline.start ?? -Infinity, range.limit ?? 30);
    return expectedRuns(this.store, pipeline, { from, to }, now, { graceMs: this.#watch.graceMs ?? DEFAULTS.didNotRunGraceMs });
  }

  async pools(): Promise<PoolUsage[]> {
    return this.store.listPools();
  }

  async setPool(name: string, slots: number, request: { description?: string } & Acting = {}): Promise<void> {
    if (!isValidId(name)) throw new UsageError(`invalid pool name ${JSON.stringify(name)}`);
    if (!Number.isInteger(slots) || slots < 0) throw new ArgumentError("slots", (n) => `${n("slots")} ${slots}: expected a whole number >= 0`);
    const at = this.clock.now();
    await this.store.setPool({ name, slots, description: request.description ?? null, at });
    tellAudit(request, await this.store.appendAudit({ at, actor: request.actor ?? defaultActor(), action: "pool-set", pipelineId: null, reason: request.reason ?? null, details: { pool: name, slots } }));
  }

  async deletePool(name: string, request: Acting = {}): Promise<void> {
    if (!(await this.store.deletePool(name))) throw new NotFoundError("pool", `no pool named "${name}"`);
    tellAudit(request, await this.store.appendAudit({ at: this.clock.now(), actor: request.actor ?? defaultActor(), action: "pool-delete", pipelineId: null, reason: request.reason ?? null, details: { pool: name } }));
  }

  /** Why a run (or one task of it) is not running, in words; also for a run that does not exist yet. */
  async why(runId: string, taskId?: string): Promise<string[]> {
    const now = this.clock.now();
    const tz = (id: string) => this.catalog.get(id)?.schedule.timezone ?? "UTC";
    const run = await this.store.getRun(runId);
    const pipelineId = runId.includes("@") ? runId.slice(0, runId.indexOf("@")) : runId;
    if (!run) return this.#whyNoRun(runId, pipelineId, now);
    return explainRun(
      {
        store: this.store,
        now,
        workerAliveMs: WORKER_ALIVE_MS,
        maxActiveTasks: this.catalog.get(run.pipelineId)?.maxActiveTasks,
        formatTime: (ms) => formatInstant(ms, tz(run.pipelineId)),
      },
      runId,
      taskId,
    );
  }

  async #whyNoRun(runId: string, pipelineId: string, now: number): Promise<string[]> {
    const pipeline = this.pipeline(pipelineId);
    const date = runId.slice(runId.indexOf("@") + 1);
    const interval = this.intervalForDate(pipelineId, date);
    const firesAt = pipeline.schedule.firesAt(interval);
    const state = await this.store.pipelineState(pipelineId, now);
    const lines = [`run ${runId} does not exist yet`];
    if (state.paused) lines.push(`pipeline ${pipelineId} is paused${state.pausedNote ? `: ${state.pausedNote}` : ""}`);
    if (firesAt > now) lines.push(`not due until ${formatInstant(firesAt, pipeline.schedule.timezone)}`);
    const live = await this.store.listRuns({ pipelineId, states: ["queued", "running"], limit: 1000 });
    if (live.length >= pipeline.maxActiveRuns) {
      lines.push(`run cap reached: ${live.length} of ${pipeline.maxActiveRuns} runs active (${live.slice(0, 5).map((r) => r.runId).join(", ")}${live.length > 5 ? ", ..." : ""})`);
    }
    const lead = await this.store.getLead("scheduler");
    if (!lead || lead.expiresAt < now) lines.push("no scheduler is running: start a scheduler");
    return lines;
  }

  /** Frozen periods that apply to the pipeline: its own and the project's. */
  frozenPeriods(pipelineId: string): FrozenPeriod[] {
    return [...this.pipeline(pipelineId).frozen, ...this.#frozen];
  }

  /** The frozen periods of a pipeline, each with where it is declared, and the recorded changes to them, newest first. */
  async frozenReport(pipelineId: string, limit = 10): Promise<{ periods: (FrozenPeriod & { declaredIn: "pipeline" | "project" })[]; changes: AuditEntry[] }> {
    const pipeline = this.pipeline(pipelineId);
    const now = this.clock.now();
    await saveVersion(this.store, pipeline, now, defaultActor());
    await this.#recordProjectFrozen(defaultActor(), now);
    const [own, project] = await Promise.all([
      this.store.pageAudit({ pipelineId, action: FROZEN_CHANGE_ACTION, limit }),
      this.store.pageAudit({ action: FROZEN_CHANGE_ACTION, limit: limit * 5 }),
    ]);
    const changes = [...own, ...project.filter((e) => e.pipelineId === null)].sort((a, b) => b.id - a.id).slice(0, limit);
    return {
      periods: [
        ...pipeline.frozen.map((p) => ({ ...p, declaredIn: "pipeline" as const })),
        ...this.#frozen.map((p) => ({ ...p, declaredIn: "project" as const })),
      ],
      changes,
    };
  }

  /** Records a change of the project's frozen periods, when this engine was given them (from idem.config.ts). */
  async #recordProjectFrozen(actor: string, at: number): Promise<void> {
    if (this.#options.frozen === undefined) return;
    await recordFrozenPeriods(this.store, { pipelineId: null, periods: this.#frozen, graphVersion: null, actor, at });
  }

  #assertNotFrozen(pipeline: Pipeline, businessDate: string, openFrozen: string | undefined): void {
    const frozen = frozenPeriodOf(this.frozenPeriods(pipeline.id), businessDate);
    if (frozen && !openFrozen) {
      throw new ArgumentError("openFrozen", (n) => `${businessDate} is ${describeFrozen(frozen)}; give ${n("openFrozen")} "<reason>" to run it anyway`, { pipeline: pipeline.id });
    }
  }

  // --- operator actions: every one is audited ----------------------------------------------

  /** A manual run for an interval, left to the scheduler's workers (`idem run` runs it here instead). */
  async trigger(pipelineId: string, date: string, request: { openFrozen?: string; params?: Params } & Acting = {}): Promise<RunRecord> {
    const pipeline = this.pipeline(pipelineId);
    assertDeclaredParams(pipeline, request.params);
    const interval = this.intervalForDate(pipelineId, date);
    this.#assertOwned(pipeline, interval);
    const now = this.clock.now();
    assertIntervalEnded(pipeline, interval, now);
    this.#assertNotFrozen(pipeline, interval.businessDate, request.openFrozen);
    const actor = request.actor ?? defaultActor();
    await saveVersion(this.store, pipeline, now, actor);
    await this.#recordProjectFrozen(actor, now);
    const { run, created } = await this.store.createRunIfAbsent(
      newRun(pipeline, interval, { trigger: "manual", triggeredBy: actor, reason: request.reason ?? null, params: request.params }, now),
    );
    if (!created) throw new ConflictError(`run ${run.runId} already exists (${run.state})`, { pipeline: pipelineId }, { action: "clear-run", runId: run.runId });
    tellAudit(request, await this.#audit(actor, "trigger", pipeline, run.runId, null, request.reason ?? null, { businessDate: interval.businessDate, openFrozen: request.openFrozen }));
    this.#announce();
    return run;
  }

  /**
   * Runs task instances again, keeping their history and continuing their try numbers: one
   * task (and, optionally, what is downstream or upstream of it), only the failed ones, or all.
   */
  async clear(
    runId: string,
    request: { taskId?: string; downstream?: boolean; upstream?: boolean; failedOnly?: boolean; reason: string; openFrozen?: string } & Acting,
  ): Promise<TaskInstanceRecord[]> {
    const run = await this.run(runId);
    const pipeline = this.pipeline(run.pipelineId);
    const tasks = await this.store.listTaskInstances(runId);
    let chosen = new Set(tasks.map((t) => t.taskId));
    if (request.taskId) {
      if (!chosen.has(request.taskId)) throw new NotFoundError("task", `run ${runId} has no task "${request.taskId}"`);
      const nodes = [...pipeline.tasks.values()];
      chosen = new Set([
        request.taskId,
        ...(request.downstream ? reachable(nodes, request.taskId, "downstream") : []),
        ...(request.upstream ? reachable(nodes, request.taskId, "upstream") : []),
      ].filter((id) => chosen.has(id)));
    }
    if (request.failedOnly) {
      const failed = new Set(tasks.filter((t) => t.state === "failed" || t.state === "upstream_failed").map((t) => t.taskId));
      chosen = new Set([...chosen].filter((id) => failed.has(id)));
    }
    if (chosen.size === 0) throw new UsageError(`nothing to clear in run ${runId}${request.failedOnly ? " (no failed task)" : ""}`);
    this.#assertNotFrozen(pipeline, run.businessDate, request.openFrozen);
    const actor = request.actor ?? defaultActor();
    await refusalsTranslated(() => this.store.rerun({
      runId, graphVersion: run.graphVersion, tasks: taskInstancesOf(pipeline), taskIds: [...chosen],
      params: run.params, at: this.clock.now(),
    }));
    tellAudit(request, await this.#audit(actor, "clear", pipeline, runId, request.taskId ?? null, request.reason, {
      tasks: [...chosen], downstream: !!request.downstream, upstream: !!request.upstream, failedOnly: !!request.failedOnly,
      ...(request.openFrozen ? { openFrozen: request.openFrozen } : {}),
    }));
    this.#announce();
    return this.taskInstances(runId);
  }

  async skip(runId: string, taskId: string, request: { reason: string } & Acting): Promise<TaskInstanceRecord> {
    const run = await this.run(runId);
    const actor = request.actor ?? defaultActor();
    const ti = await refusalsTranslated(() => this.store.skipTask({ runId, taskId, reason: `skipped by ${actor}: ${request.reason}`, at: this.clock.now() }));
    tellAudit(request, await this.#audit(actor, "skip", this.pipeline(run.pipelineId), runId, taskId, request.reason, {}));
    this.#announce();
    return ti;
  }

  async mark(runId: string, taskId: string, request: { state: "success" | "failed"; reason: string } & Acting): Promise<TaskInstanceRecord> {
    const run = await this.run(runId);
    const actor = request.actor ?? defaultActor();
    const ti = await refusalsTranslated(() => this.store.markTask({ runId, taskId, state: request.state, reason: request.reason, at: this.clock.now() }));
    tellAudit(request, await this.#audit(actor, `mark-${request.state}`, this.pipeline(run.pipelineId), runId, taskId, request.reason, {}));
    this.#announce();
    return ti;
  }

  async audit(query: { pipelineId?: string; limit?: number } = {}): Promise<AuditEntry[]> {
    if (query.pipelineId && this.#pipelinesLoaded) this.pipeline(query.pipelineId);
    return this.store.listAudit(query);
  }

  async #audit(actor: string, action: string, pipeline: Pipeline, runId: string | null, taskId: string | null, reason: string | null, details: Record<string, unknown>): Promise<AuditEntry> {
    return this.store.appendAudit({ at: this.clock.now(), actor, action, pipelineId: pipeline.id, runId, taskId, reason, graphVersion: pipeline.version, details });
  }

  // --- backfills ------------------------------------------------------------------------------

  async planBackfill(pipelineId: string, request: BackfillRequest): Promise<BackfillPlan> {
    return this.#backfills.plan(pipelineId, request);
  }

  /** Plans and stores a backfill; the scheduler runs it. The same live backfill asked again is returned, not duplicated. */
  async backfill(pipelineId: string, request: BackfillRequest & { reason: string } & Acting): Promise<{ backfill: BackfillRecord; created: boolean; plan: BackfillPlan }> {
    return this.#backfills.create(pipelineId, request);
  }

  async backfills(query: { pipelineId?: string; limit?: number } = {}): Promise<(BackfillRecord & { progress: BackfillProgress })[]> {
    return this.#backfills.list(query);
  }

  async backfillStatus(backfillId: string): Promise<BackfillRecord & { progress: BackfillProgress }> {
    return this.#backfills.status(backfillId);
  }

  async controlBackfill(backfillId: string, action: "pause" | "resume" | "cancel", request: Acting = {}): Promise<BackfillRecord> {
    return this.#backfills.control(backfillId, action, request);
  }

  /** Per promised dataset: newest published date, its status against the deadline, the last days; and whether the checker lives. */
  async freshness(days = 7): Promise<FreshnessReport> {
    return freshnessReport(this.store, this.pipelines(), this.clock.now(), this.#watch.staleMs ?? DEFAULTS.checkerStaleMs, days);
  }

  /** Who runs the checker, how fresh its last pass is, and whether a scheduler leads. */
  async health(): Promise<CheckerHealth> {
    return checkerHealth(this.store, this.clock.now(), this.#watch.staleMs ?? DEFAULTS.checkerStaleMs);
  }

  /**
   * The watchdog for this process: every idem process that stays up (scheduler, worker, `idem
   * serve`) runs one, and the checker lease lets one pass at a time. `role` names the process
   * for `idem health` ("worker", "serve").
   */
  watchdog(role: string, log?: (line: string) => void): Watchdog {
    const notifiers = this.#notifiers();
    const missing = missingNotifierVariable(notifiers, process.env);
    if (missing) throw new DefinitionError(missing, { file: this.#watch.configFile ?? "idem.config.ts" });
    const watch = this.#watch;
    return new Watchdog({
      store: this.store,
      clock: this.clock,
      pipelines: () => this.pipelines(),
      holder: `${role} ${this.workerId}`,
      notifiers,
      defaultNotify: watch.defaultNotify ?? ["log"],
      routes: watch.routes ?? [],
      schedulerStarting: () => this.#schedulerStart.pending,
      ...(watch.digest === undefined ? {} : { digest: watch.digest }),
      ...(watch.failing === undefined ? {} : { failing: watch.failing }),
      ...(watch.uiUrl === undefined ? {} : { uiUrl: watch.uiUrl }),
      ...(watch.intervalMs === undefined ? {} : { intervalMs: watch.intervalMs }),
      ...(watch.graceMs === undefined ? {} : { graceMs: watch.graceMs }),
      // A notifier's refusal may quote what it was sent, a secret included.
      ...(log ? { log: (line: string) => log(this.masker.mask(line)) } : {}),
    });
  }

  /**
   * Sends a test message through the notifier `name`, as an alert goes (`idem alerts test`):
   * its kind when it went out; an error naming the notifier and the cause when it did not.
   */
  async testNotifier(name: string, log: (line: string) => void = () => {}): Promise<{ notifier: string; kind: string }> {
    const notifiers = this.#notifiers();
    if (!notifiers[name]) throw new UsageError(`no notifier named ${JSON.stringify(name)} (known: ${Object.keys(notifiers).join(", ")})`);
    const missing = missingNotifierVariable({ [name]: notifiers[name] }, process.env);
    if (missing) throw new DefinitionError(missing, { file: this.#watch.configFile ?? "idem.config.ts" });
    const dispatcher = new AlertDispatcher({
      store: this.store, clock: this.clock, notifiers, log: (line) => log(this.masker.mask(line)), uiUrl: this.#watch.uiUrl ?? null,
    });
    try {
      const { kind } = await dispatcher.sendTest(name);
      return { notifier: name, kind };
    } catch (error) {
      throw new Error(this.masker.mask(`notifier ${name} failed: ${(error as Error).message}`));
    }
  }

  #notifiers(): Record<string, NotifierConfig> {
    return { log: { log: true }, ...this.#watch.notifiers };
  }

  /**
   * Is this installation healthy: the scheduler's checker alive, and every pipeline file loaded?
   * Every surface (CLI, HTTP) shows this; `brokenFiles` are those this process sees.
   */
  async installationHealth(): Promise<Health> {
    const checker = await this.health();
    const brokenFiles = this.brokenFiles();
    return { status: checker.status === "ok" ? (brokenFiles.length ? "degraded" : "ok") : checker.status, checker, brokenFiles };
  }

  /** Incidents, newest first, each with its state now (open, acknowledged, resolved). */
  async incidents(query: { open?: boolean; limit?: number } = {}): Promise<IncidentView[]> {
    return (await this.store.listIncidents(query)).map((i) => this.#incidents.view(i));
  }

  async incident(key: string): Promise<IncidentView> {
    return this.#incidents.get(key);
  }

  /** A person acknowledges an incident (`until`: a snooze, open again then unless resolved), with a reason; audited. */
  async acknowledgeIncident(key: string, request: IncidentAcknowledgeRequest & Acting): Promise<IncidentView> {
    return this.#incidents.acknowledge(key, request);
  }

  /** A person resolves an incident, with a reason; audited, and the notifiers told of its opening hear of it. */
  async resolveIncident(key: string, request: { reason: string } & Acting): Promise<IncidentView> {
    return this.#incidents.resolve(key, request);
  }

  /** Saved watermarks of incremental loads, by pipeline then task. */
  async watermarks(pipelineId?: string): Promise<WatermarkRecord[]> {
    if (pipelineId !== undefined && this.#pipelinesLoaded) this.pipeline(pipelineId);
    return this.store.listWatermarks(pipelineId);
  }

  /**
   * Sets a task's watermark by hand (to reload from an earlier point, say), audited; refused
   * while a live run still has that task to finish. The value keeps the saved one's type: a
   * number stays a number.
   */
  async setWatermark(pipelineId: string, taskId: string, text: string, request: { reason: string; actor?: string }): Promise<{ previous: string | number | null; value: string | number }> {
    const pipeline = this.pipeline(pipelineId);
    if (!pipeline.tasks.has(taskId)) {
      throw new UsageError(`pipeline ${pipelineId} has no task "${taskId}": a watermark belongs to the task that loads incrementally (tasks: ${[...pipeline.tasks.keys()].join(", ")})`);
    }
    const current = await this.store.getWatermark(pipelineId, taskId);
    const numeric = text.trim() !== "" && Number.isFinite(Number(text));
    if (typeof current === "number" && !numeric) throw new UsageError(`watermark ${pipelineId} ${taskId} is a number (${current}); ${JSON.stringify(text)} is not one`);
    const value = typeof current === "number" || (current === null && numeric) ? Number(text) : text;
    const result = await this.store.setWatermarkByHand({ pipelineId, taskId, value, at: this.clock.now() });
    if (!result.set) {
      throw new UsageError(`run ${result.liveRunId} is live and has ${taskId} still to finish, so it owns the watermark: set it once that run is done`, { pipeline: pipelineId });
    }
    await this.#audit(request.actor ?? defaultActor(), "watermark-set", pipeline, null, taskId, request.reason, { previous: result.previous, value });
    return { previous: result.previous, value };
  }

  #assertOwned(pipeline: Pipeline, interval: Interval): void {
    if (pipeline.start !== null && interval.start < pipeline.start) {
      throw new UsageError(`${interval.businessDate} is before the pipeline's start (${pipeline.definition.start === null ? "" : new Date(pipeline.start).toISOString()})`, { pipeline: pipeline.id });
    }
    if (pipeline.end !== null && interval.start >= pipeline.end) {
      throw new UsageError(`${interval.businessDate} is after the pipeline's end`, { pipeline: pipeline.id });
    }
  }

  // --- API tokens: the HTTP surface's credentials ----------------------------------------------

  /** A new token; the secret is returned this once and only its hash is stored. */
  async createToken(request: { name: string; role: TokenRole } & Acting): Promise<{ token: TokenInfo; secret: string }> {
    return this.#tokens.create(request);
  }

  async listTokens(query: { includeRevoked?: boolean } = {}): Promise<TokenInfo[]> {
    return this.#tokens.list(query);
  }

  async revokeToken(name: string, request: Acting = {}): Promise<TokenInfo> {
    return this.#tokens.revoke(name, request);
  }

  async hasTokens(): Promise<boolean> {
    return this.#tokens.any();
  }

  /** The live token a secret belongs to, or null. */
  async verifyToken(secret: string): Promise<{ name: string; role: TokenRole; hash: string } | null> {
    return this.#tokens.verify(secret);
  }

  // --- reads for the HTTP surface ----------------------------------------------------------------

  /** This process's reader of the store's change feed, shared by every listener. */
  changeFeed(log?: (line: string) => void): ChangeFeed {
    this.#changeFeed ??= new ChangeFeed(this.store, this.clock, log);
    return this.#changeFeed;
  }

  /**
   * One page of a pipeline's runs, newest business date first. `after` is the interval start of
   * the last run of the previous page; `next` is the same for this page, null on the last one.
   */
  async runsPage(
    pipelineId: string,
    query: { states?: readonly RunState[]; triggers?: readonly TriggerKind[]; fromDate?: string; toDate?: string; limit: number; after?: number },
  ): Promise<Page<RunRecord, number>> {
    return this.#pages.runs(pipelineId, query);
  }

  /** A backfill's plan, one item per business date, in execution order. */
  async backfillItems(backfillId: string): Promise<BackfillItem[]> {
    await this.backfillStatus(backfillId);
    return this.store.backfillItems(backfillId);
  }

  /**
   * A grid: the pipeline's runs whose business dates lie in [fromDate, toDate] (newest first, at
   * most `limit`) and all their task instances, in two queries.
   */
  async taskGrid(pipelineId: string, range: { fromDate: string; toDate: string; limit?: number }): Promise<{ runs: RunRecord[]; tasks: TaskInstanceRecord[] }> {
    const { items: runs } = await this.runsPage(pipelineId, { fromDate: range.fromDate, toDate: range.toDate, limit: range.limit ?? 1000 });
    return { runs, tasks: await this.store.taskInstancesOfRuns(runs.map((r) => r.runId)) };
  }

  /** The task instances of several runs at once (a grid's cells). */
  async taskInstancesOfRuns(runIds: readonly string[]): Promise<TaskInstanceRecord[]> {
    return this.store.taskInstancesOfRuns(runIds);
  }

  /** Only the state of each task instance of these runs (a grid's cells), in one query. */
  async taskStatesOfRuns(runIds: readonly string[]): Promise<TaskStateCell[]> {
    return this.store.taskStatesOfRuns(runIds);
  }

  /** One page of the audit log, newest first; `from` and `to` are instants or dates (a date is midnight UTC). */
  async auditPage(query: { pipelineId?: string; actor?: string; action?: string; from?: string; to?: string; limit: number; after?: number }): Promise<Page<AuditEntry, number>> {
    return this.#pages.audit(query);
  }

  async incidentsPage(query: { open?: boolean; limit: number; after?: { openedAt: number; key: string } }): Promise<Page<IncidentView, { openedAt: number; key: string }>> {
    const page = await this.#pages.incidents(query);
    return { ...page, items: page.items.map((i) => this.#incidents.view(i)) };
  }

  /** A page of alerts queued for incidents, newest first: notifier, open or resolve, queued / failed / sent, tries, last error. */
  async alertsPage(query: { pipelineId?: string; incidentKey?: string; state?: AlertState; limit: number; after?: number }): Promise<Page<AlertRecord, number>> {
    return this.#pages.alerts(query);
  }

  /** A run's audit trail, newest first (every restatement and refusal, clear, mark, ...); `actions` narrows it. */
  async runAudit(runId: string, query: { actions?: readonly string[]; limit?: number } = {}): Promise<AuditEntry[]> {
    await this.run(runId);
    return this.store.auditOfRun({ runId, actions: query.actions, limit: query.limit ?? 100 });
  }

  async datasetEventsPage(query: { dataset?: string; limit: number; after?: number }): Promise<Page<DatasetEvent, number>> {
    return this.#pages.datasetEvents(query);
  }

  /** A producer outside idem says a dataset is ready for a business date; data triggers take it as a publication. */
  async emitDatasetEvent(dataset: string, request: DatasetEventRequest): Promise<EmittedDatasetEvent> {
    const environment = {
      store: this.store, clock: this.clock, knownDatasets: () => this.datasets().map((d) => d.name), wakeScheduler: () => notifyScheduler(this.stateDir),
    };
    return emitDatasetEvent(environment, dataset, request);
  }

  /** Why a signed dataset webhook request is refused (no webhook, no secret, a signature that does not hold), or null. */
  datasetWebhookRefusal(request: { signature: string | undefined; body: string }): WebhookRefusal | null {
    return datasetWebhookRefusal(this.#options.datasetWebhook ?? null, { ...request, now: this.clock.now(), environment: process.env });
  }

  /** Datasets the loaded pipelines name: who produces and publishes each, who waits on it, its promise. */
  datasets(): DatasetInfo[] {
    const byName = new Map<string, DatasetInfo>();
    const entry = (name: string) => {
      let found = byName.get(name);
      if (!found) byName.set(name, (found = { name, producedBy: [], publishedBy: [], triggers: [], promisedBy: [] }));
      return found;
    };
    for (const pipeline of this.pipelines()) {
      for (const task of pipeline.tasks.values()) {
        for (const d of task.produces) entry(d).producedBy.push({ pipelineId: pipeline.id, taskId: task.id });
        if (task.publishes) entry(task.publishes).publishedBy.push({ pipelineId: pipeline.id, taskId: task.id });
      }
      for (const d of pipeline.triggerOn) entry(d).triggers.push(pipeline.id);
      for (const promise of pipeline.promises) entry(promise.dataset).promisedBy.push(pipeline.id);
    }
    return [...byName.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  /** Workers that have sent a heartbeat, with whether they look alive now. */
  async workers(): Promise<(WorkerRecord & { alive: boolean })[]> {
    const now = this.clock.now();
    return (await this.store.listWorkers()).map((w) => ({ ...w, alive: now - w.lastSeen < WORKER_ALIVE_MS }));
  }

  /** Who holds the scheduler's leader lease, and whether it is current. */
  async leadership(): Promise<{ holder: string; term: number; expiresAt: number; renewedAt: number; current: boolean } | null> {
    const lead = await this.store.getLead("scheduler");
    if (!lead) return null;
    return { holder: lead.holder, term: lead.term, expiresAt: lead.expiresAt, renewedAt: lead.renewedAt, current: lead.expiresAt >= this.clock.now() };
  }

  /** The pipeline's scheduling state (paused, by whom, the schedule cursor). */
  async pipelineState(pipelineId: string): Promise<PipelineState> {
    this.pipeline(pipelineId);
    return this.store.pipelineState(pipelineId, this.clock.now());
  }

  /**
   * Bytes [offset, offset + length) of one attempt's log, with the file's size now and whether
   * the attempt has ended (so a reader knows the log can still grow).
   */
  async logRange(runId: string, taskId: string, tryNumber: number, range: { offset: number; length: number }): Promise<LogRange> {
    const attempts = await this.attempts(runId, taskId);
    const attempt = attempts.find((a) => a.tryNumber === tryNumber);
    if (!attempt) {
      if (attempts.length === 0 && !(await this.store.listTaskInstances(runId)).some((t) => t.taskId === taskId)) {
        throw new NotFoundError("task", `run ${runId} has no task "${taskId}"`);
      }
      throw new NotFoundError("attempt", `task ${taskId} of run ${runId} has no try ${tryNumber}${attempts.length ? ` (tries: ${attempts.map((a) => a.tryNumber).join(", ")})` : " (it has not run yet)"}`);
    }
    const ended = attempt.state !== "running";
    let file: FileHandle;
    try {
      file = await open(attempt.logPath, "r");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return { attempt, size: 0, offset: range.offset, bytes: Buffer.alloc(0), ended };
      throw error;
    }
    try {
      const size = (await file.stat()).size;
      const length = Math.max(0, Math.min(range.length, size - range.offset));
      const bytes = Buffer.alloc(length);
      if (length > 0) await file.read(bytes, 0, length, range.offset);
      return { attempt, size, offset: range.offset, bytes, ended };
    } finally {
      await file.close();
    }
  }
}

export interface DatasetInfo {
  name: string;
  producedBy: { pipelineId: string; taskId: string }[];
  publishedBy: { pipelineId: string; taskId: string }[];
  /** Pipelines that get a run when it is produced. */
  triggers: string[];
  /** Pipelines that promise its freshness. */
  promisedBy: string[];
}

export interface LogRange {
  attempt: AttemptRecord;
  /** The log file's size in bytes at the time of reading. */
  size: number;
  offset: number;
  bytes: Buffer;
  /** The attempt has ended: the log will not grow. */
  ended: boolean;
}

function inTaskOrder(pipeline: Pipeline, tasks: TaskInstanceRecord[]): TaskInstanceRecord[] {
  const order = [...pipeline.tasks.keys()];
  const rank = (id: string) => (order.indexOf(id) + 1 || order.length + 1);
  return [...tasks].sort((a, b) => rank(a.taskId) - rank(b.taskId) || a.taskId.localeCompare(b.taskId));
}
