import { codeLines, type CodeStanding } from "./records/code-choice.ts";
import { RunCode } from "./run-code.ts";
import type { CodeVersionUse } from "../store/port.ts";
import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import type { Clock } from "../core/model/clock.ts";
import type { Prefetch } from "../core/policy/prefetch-depth.ts";
import { NotFoundError } from "../core/model/errors.ts";
import type { Params, Pipeline } from "../core/pipeline/types.ts";
import type { Interval } from "../core/time/interval.ts";
import type { Due } from "../core/time/timetable.ts";
import type {
  AlertRecord, AlertState, AttemptRecord, AuditEntry, ExternalJobRecord, BackfillItem, BackfillProgress, BackfillRecord, DatasetEvent, PipelineState,
  PoolUsage, RunRecord, Store, TaskInstanceRecord, TaskStateCell, TokenRole, WatermarkRecord, WorkerRecord,
} from "../store/port.ts";
import type { RunState, TriggerKind } from "../core/model/states.ts";
import type { FrozenPeriod } from "../core/policy/frozen.ts";
import { defaultActor, tellAudit, type Acting } from "./acting.ts";
import type { EngineContext } from "./engine-context.ts";
import { ApiTokens, type TokenInfo } from "./tokens.ts";
import { collectBundles, type BundleCollection } from "./records/bundle-collection.ts";
import { bundleCollectionOf, type BundleCollectionSchedule } from "./project/defaults.ts";
import { codeDiff, pickCodeVersion, type CodeDiff } from "./code-diff.ts";
import { codeOf } from "./project/code-of.ts";
import type { BundleRetention } from "../core/policy/bundle-retention.ts";
import { Pages, type Page } from "./pages.ts";
import { Backfills, type BackfillPlan, type BackfillRequest } from "./backfills.ts";
import { IncidentActions, type IncidentAcknowledgeRequest, type IncidentView } from "./incidents.ts";
import { FrozenPeriods } from "./frozen-periods.ts";
import { intervalBetween, intervalForDate } from "./intervals.ts";
import { RunReads } from "./run-reads.ts";
import { MappedInstances } from "./mapped-instances.ts";
import { TaskRows } from "./task-rows.ts";
import { AttemptLogs, type LogRange } from "./attempt-logs.ts";
import { RunActions } from "./run-actions.ts";
import { RunHere, type RunRequest, type RunResult } from "./run-here.ts";
import { Scheduling } from "./scheduling.ts";
import { Pools } from "./pools.ts";
import { Datasets, type DatasetInfo } from "./datasets.ts";
import { Watermarks } from "./watermarks.ts";
import { Watch, type WatchSettings } from "./watch.ts";
import { InstallationHealth, type Health } from "./health.ts";
import { TaskHosts } from "./task-hosts.ts";
import type { DatasetEventRequest, EmittedDatasetEvent, WebhookRefusal } from "./external-events.ts";
import { ChangeFeed } from "./changes/change-feed.ts";
import type { Watchdog } from "./freshness/watchdog.ts";
import type { CheckerHealth, FreshnessReport } from "./freshness/report.ts";
import type { RestateEstimate } from "./backfill/restate-estimate.ts";
import type { ExpectedRun } from "./scheduler/ledger.ts";
import { notifyScheduler, notifyWork } from "./worker/wakeup.ts";
import type { ConnectionConfig, ResolvedDatasetWebhook } from "./project/config.ts";
import { PipelineCatalog, type BrokenFile } from "./project/catalog.ts";
import { withheldVariables } from "./executor/command-env.ts";
import type { TaskCodeRunner } from "./executor/task-code-runner.ts";
import { SecretMasker } from "./secrets/masker.ts";
import type { LongLivedOptions, ProcessParts, ProcessSettings, WorkerRequest } from "./processes.ts";
import { SchedulerStart } from "./scheduler/scheduler-start.ts";
import { EngineEvents } from "./events/engine-events.ts";
import type { ProcessStatus } from "./events/process-status.ts";
import { RunTraces } from "./tracing/run-traces.ts";
import { tracingEnabled } from "./tracing/trace-ids.ts";
import { storeFacts, type StoreFacts } from "./metrics/store-facts.ts";
import type { EngineMetrics } from "./metrics/prometheus.ts";
import { DEFAULTS } from "./project/defaults.ts";

export type { Acting } from "./acting.ts";
export { defaultActor } from "./acting.ts";
export type { Page } from "./pages.ts";
export type { TokenInfo } from "./tokens.ts";
export type { BackfillPlan, BackfillRequest } from "./backfills.ts";
export type { IncidentView } from "./incidents.ts";
export type { DatasetEventRequest, EmittedDatasetEvent, WebhookRefusal } from "./external-events.ts";
export type { RunRequest, RunResult } from "./run-here.ts";
export type { LogRange } from "./attempt-logs.ts";
export type { DatasetInfo } from "./datasets.ts";
export type { WatchSettings } from "./watch.ts";
export type { Health } from "./health.ts";

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
  /** When the leading scheduler collects old bundles (`collectBundles` in idem.config.ts); absent: the defaults, null: never. */
  bundleCollection?: BundleCollectionSchedule | null;
  /** The signed dataset webhook (`datasetWebhook` in idem.config.ts); absent: none. */
  datasetWebhook?: ResolvedDatasetWebhook | null;
}

/**
 * What every surface (CLI, HTTP, UI) calls. It translates intentions into store operations and
 * executions; it never reads the wall clock itself. Each concern lives in a role file of its own
 * (run actions, reads, scheduling, pools, datasets, the watch, health, ...); this class builds
 * them from its options and delegates to them, one line per operation.
 */
export class Engine {
  readonly store: Store;
  readonly clock: Clock;
  readonly stateDir: string;
  readonly catalog: PipelineCatalog;
  readonly #options: EngineOptions;
  /** What this process's scheduler, workers, task hosts, watchdog and server do (logs, metrics, traces listen). */
  readonly events = new EngineEvents();
  /** The long-running parts running in this process now (scheduler, workers, watchdog), for `processStatus`. */
  readonly #live = new Set<{ status(): ProcessStatus }>();
  /** Spans of the runs this process ends and the attempts it records: only with an OTLP endpoint set. */
  readonly #traces: RunTraces | null;
  #metrics: Promise<EngineMetrics> | null = null;
  readonly connections: Record<string, ConnectionConfig>;
  readonly workerId: string;
  readonly masker: SecretMasker;
  /** Variables of this process that task processes do not inherit (see command-env.ts). */
  readonly withheldEnv: readonly string[];
  #changeFeed: ChangeFeed | null = null;
  readonly #schedulerStart = new SchedulerStart();
  readonly #taskHosts: TaskHosts;
  readonly #tokens: ApiTokens;
  readonly #pages: Pages;
  readonly #frozen: FrozenPeriods;
  readonly #backfills: Backfills;
  readonly #incidents: IncidentActions;
  readonly #runReads: RunReads;
  readonly #mapped: MappedInstances;
  readonly #taskRows: TaskRows;
  readonly #logs: AttemptLogs;
  readonly #runActions: RunActions;
  readonly #runCode: RunCode;
  readonly #runHere: RunHere;
  readonly #scheduling: Scheduling;
  readonly #pools: Pools;
  readonly #datasets: Datasets;
  readonly #watermarks: Watermarks;
  readonly #watch: Watch;
  readonly #health: InstallationHealth;

  constructor(options: EngineOptions) {
    this.masker = new SecretMasker(options.secrets ?? []);
    this.#traces = tracingEnabled(process.env) ? new RunTraces((runId) => this.store.getRun(runId)) : null;
    this.#traces?.follow(this.events);
    this.withheldEnv = withheldVariables(process.env, options.stateUrl ?? null);
    this.store = options.store;
    this.clock = options.clock;
    this.stateDir = options.stateDir;
    this.catalog = options.catalog ?? PipelineCatalog.of(options.pipelines ?? []);
    this.#options = options;
    this.connections = options.connections ?? {};
    this.workerId = `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
    const projectDir = options.projectDir ?? process.cwd();
    const context: EngineContext = {
      store: this.store,
      clock: this.clock,
      stateDir: this.stateDir,
      catalog: this.catalog,
      pipelinesLoaded: options.pipelines !== undefined || options.catalog !== undefined,
      pipeline: (id) => this.pipeline(id),
      audit: (actor, action, pipeline, runId, taskId, reason, details) =>
        this.store.appendAudit({ at: this.clock.now(), actor, action, pipelineId: pipeline.id, runId, taskId, reason, graphVersion: pipeline.version, details }),
      announce: () => {
        notifyWork(this.stateDir);
        notifyScheduler(this.stateDir);
      },
      events: this.events,
    };
    this.#taskHosts = new TaskHosts({
      catalog: this.catalog, projectDir, withheldEnv: this.withheldEnv, memoryMb: options.taskMemoryMb, logMaxBytes: options.logMaxBytes ?? null, secrets: options.secrets ?? [],
      events: this.events,
    });
    this.#tokens = new ApiTokens(this.store, this.clock);
    this.#pages = new Pages(this.store, (id) => this.pipeline(id));
    this.#incidents = new IncidentActions(this.store, this.clock);
    this.#frozen = new FrozenPeriods(context, options.frozen);
    this.#backfills = new Backfills({
      ...context,
      frozenPeriods: (id) => this.#frozen.of(id),
      recordVersion: (pipeline, actor, at) => this.#frozen.recordVersion(pipeline, actor, at),
    });
    this.#runReads = new RunReads(context, this.#pages);
    this.#mapped = new MappedInstances(context, this.#runReads);
    this.#taskRows = new TaskRows(context, this.#runReads);
    this.#logs = new AttemptLogs(context, this.#runReads);
    this.#runActions = new RunActions(context, this.#frozen, this.#runReads);
    this.#runCode = new RunCode(context, this.#runReads);
    this.#runHere = new RunHere(context, this.#frozen, {
      workerId: this.workerId, concurrency: this.settings.concurrency, workerLeaseMs: options.workerLeaseMs, reloadMs: options.reloadMs, projectDir,
      random: options.random ?? Math.random, frozen: this.#frozen.project, connections: this.connections, logMaxBytes: options.logMaxBytes,
      masker: this.masker, withheldEnv: this.withheldEnv, events: this.events, taskRunner: (size) => this.taskRunner(size),
    });
    this.#watch = new Watch(context, options.watch ?? {}, { workerId: this.workerId, masker: this.masker, events: this.events, schedulerStart: this.#schedulerStart });
    this.#scheduling = new Scheduling(context, this.#frozen, this.#watch.graceMs);
    this.#pools = new Pools(context);
    this.#datasets = new Datasets(context, this.#pages, options.datasetWebhook ?? null);
    this.#watermarks = new Watermarks(context);
    this.#health = new InstallationHealth(context, this.#watch.staleMs);
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

  /** Ends the task hosts (they would end with this process anyway), and the store when the engine opened it. */
  async close(): Promise<void> {
    await this.#metrics?.then((metrics) => metrics.close(), () => undefined);
    await this.#traces?.shutdown();
    await this.#taskHosts.close();
    if (this.#options.ownsStore) await this.store.close();
  }

  // --- the long-running processes, built from the engine's config (processes.ts) -----------------

  /**
   * Where task code runs: long-lived task hosts for pipelines loaded from files (started on
   * first use, at most `size`), this process for pipelines that exist only in memory.
   */
  taskRunner(size: number): TaskCodeRunner {
    return this.#taskHosts.runner(size);
  }

  /** Starts task hosts ahead of the first attempt (after taskRunner). */
  warmTaskHosts(count: number): void {
    this.#taskHosts.warm(count);
  }

  /** The config's numbers for the scheduler and workers. */
  get settings(): ProcessSettings {
    const o = this.#options;
    return {
      concurrency: o.concurrency ?? DEFAULTS.concurrency, prefetch: o.prefetch ?? "auto", parallelism: o.parallelism, workerLeaseMs: o.workerLeaseMs ?? DEFAULTS.workerLeaseMs,
      schedulerLeaseMs: o.schedulerLeaseMs ?? DEFAULTS.schedulerLeaseMs, reloadMs: o.reloadMs ?? null, logMaxBytes: o.logMaxBytes ?? null, pools: o.pools ?? {},
      bundleCollection: o.bundleCollection === undefined ? bundleCollectionOf(undefined) : o.bundleCollection,
    };
  }

  /**
   * Runs `body` as a long-lived process in the role given (scheduler, worker, serve, dev), until
   * `signal`: the config's pools exist, pipeline files are reloaded every `reloadMs`, a watchdog runs.
   */
  async runLongLived(role: string, signal: AbortSignal, body: () => Promise<void>, options: LongLivedOptions = {}): Promise<void> {
    await (await import("./processes.ts")).runLongLived(this.#processParts(), role, signal, body, options);
  }

  /** Runs this process's scheduler until `signal`: it leads, or stands by while another leads. */
  async runScheduler(signal: AbortSignal): Promise<void> {
    await (await import("./processes.ts")).runScheduler(this.#processParts(), signal);
  }

  /** Runs a worker as the config says (flags may override concurrency and grace) until `signal`. */
  async runWorker(signal: AbortSignal, request: WorkerRequest = {}): Promise<void> {
    await (await import("./processes.ts")).runWorker(this.#processParts(), signal, request);
  }

  /**
   * With no live scheduler, runs the backfill in this process (a scheduler for backfills only and
   * a worker on its runs) until `signal`; `done` settles when they have stopped. Null when a
   * scheduler is live: it runs the backfill.
   */
  async runBackfillHere(backfillId: string, maxActiveRuns: number, signal: AbortSignal): Promise<{ done: Promise<void> } | null> {
    return (await import("./processes.ts")).runBackfillHere(this.#processParts(), backfillId, maxActiveRuns, signal);
  }

  #processParts(): ProcessParts {
    return {
      store: this.store, clock: this.clock, stateDir: this.stateDir, projectDir: this.#options.projectDir ?? process.cwd(), catalog: this.catalog,
      frozen: this.#frozen.project, connections: this.connections, masker: this.masker, withheldEnv: this.withheldEnv, workerId: this.workerId,
      settings: this.settings,
      taskRunner: (size) => this.taskRunner(size),
      warmTaskHosts: (count) => this.warmTaskHosts(count),
      watchdog: (role) => this.watchdog(role),
      events: this.events,
      live: (part) => {
        this.#live.add(part);
        return () => this.#live.delete(part);
      },
      schedulerStart: this.#schedulerStart,
    };
  }

  /** What each long-running part of this process is doing now: its state and counts (health and metrics read it). */
  processStatus(): ProcessStatus[] {
    const hosts = this.#taskHosts.status();
    return [...[...this.#live].map((part) => part.status()), ...(hosts ? [hosts] : [])];
  }

  // --- metrics -----------------------------------------------------------------------------------

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
      prometheusMetrics({ events: this.events, storeFacts: () => this.storeFacts(), taskHostsAlive: () => this.#taskHosts.alive }),
    );
    return this.#metrics;
  }

  // --- intervals and runs in this process (run-here.ts) --------------------------------------------

  /** The interval a business date names under the pipeline's schedule. */
  intervalForDate(pipelineId: string, date: string): Interval {
    return intervalForDate(this.pipeline(pipelineId), date);
  }

  /** An interval given by its bounds (for schedules that are not daily). */
  intervalBetween(pipelineId: string, start: string, end: string): Interval {
    return intervalBetween(this.pipeline(pipelineId), start, end);
  }

  /**
   * Runs the pipeline for one interval in this process and waits for the end. The first call
   * creates the run; a later call for the same interval runs that same run again.
   */
  async runInterval(pipelineId: string, interval: Interval, request: RunRequest = {}): Promise<RunResult> {
    return this.#runHere.run(pipelineId, interval, request);
  }

  async runForDate(pipelineId: string, date: string, request: RunRequest = {}): Promise<RunResult> {
    return this.runInterval(pipelineId, this.intervalForDate(pipelineId, date), request);
  }

  // --- reads of runs, task instances, attempts and their logs (run-reads.ts, attempt-logs.ts) ------

  async runs(pipelineId: string, limit = 50): Promise<RunRecord[]> {
    return this.#runReads.runs(pipelineId, limit);
  }

  async run(runId: string): Promise<RunRecord> {
    return this.#runReads.run(runId);
  }

  /** A run's task instances, in the pipeline's task order when the pipeline is loaded. */
  async taskInstances(runId: string): Promise<TaskInstanceRecord[]> {
    return this.#runReads.taskInstances(runId);
  }

  /** One task instance (a mapped instance by its id, task[key]), without reading the run's others. */
  async taskInstance(runId: string, taskId: string): Promise<TaskInstanceRecord> {
    return this.#runReads.taskInstance(runId, taskId);
  }

  /** A mapped task's instances in a run, a page at a time by key (keyset: `after` is the last key seen). */
  async mappedInstances(...args: Parameters<MappedInstances["page"]>): ReturnType<MappedInstances["page"]> {
    return this.#mapped.page(...args);
  }

  async attempts(runId: string, taskId?: string): Promise<AttemptRecord[]> {
    return this.#runReads.attempts(runId, taskId);
  }

  /** A run's task instances one row per task: a mapped task with its instances counted by state, never listed. */
  async taskRows(runId: string): Promise<TaskInstanceRecord[]> {
    return this.#taskRows.ofRun(runId);
  }

  /** The attempts of those rows: a mapped task's own, none of its instances'. */
  async taskRowAttempts(runId: string): Promise<AttemptRecord[]> {
    return this.#taskRows.attempts(runId);
  }

  async externalJobs(runId: string, taskId?: string): Promise<ExternalJobRecord[]> {
    return this.#runReads.externalJobs(runId, taskId);
  }

  /**
   * One page of a pipeline's runs, newest business date first. `after` is the interval start of
   * the last run of the previous page; `next` is the same for this page, null on the last one.
   */
  async runsPage(
    pipelineId: string,
    query: { states?: readonly RunState[]; triggers?: readonly TriggerKind[]; codeVersion?: string; fromDate?: string; toDate?: string; limit: number; after?: number },
  ): Promise<Page<RunRecord, number>> {
    return this.#runReads.runsPage(pipelineId, query);
  }

  /**
   * A grid: the pipeline's runs whose business dates lie in [fromDate, toDate] (newest first, at
   * most `limit`) and all their task instances, in two queries.
   */
  async taskGrid(pipelineId: string, range: { fromDate: string; toDate: string; limit?: number }): Promise<{ runs: RunRecord[]; tasks: TaskInstanceRecord[] }> {
    return this.#runReads.taskGrid(pipelineId, range);
  }

  /** The task instances of several runs at once (a grid's cells). */
  async taskInstancesOfRuns(runIds: readonly string[]): Promise<TaskInstanceRecord[]> {
    return this.#runReads.taskInstancesOfRuns(runIds);
  }

  /** Only the state of each task instance of these runs (a grid's cells), in one query. */
  async taskStatesOfRuns(runIds: readonly string[]): Promise<TaskStateCell[]> {
    return this.#runReads.taskStatesOfRuns(runIds);
  }

  /** A run's audit trail, newest first (every restatement and refusal, clear, mark, ...); `actions` narrows it. */
  async runAudit(runId: string, query: { actions?: readonly string[]; limit?: number } = {}): Promise<AuditEntry[]> {
    return this.#runReads.runAudit(runId, query);
  }

  async audit(query: { pipelineId?: string; limit?: number } = {}): Promise<AuditEntry[]> {
    return this.#runReads.audit(query);
  }

  /** One page of the audit log, newest first; `from` and `to` are instants or dates (a date is midnight UTC). */
  async auditPage(query: { pipelineId?: string; actor?: string; action?: string; from?: string; to?: string; limit: number; after?: number }): Promise<Page<AuditEntry, number>> {
    return this.#runReads.auditPage(query);
  }

  /** The log of one attempt (the given try, or the latest) as text: for small logs and tests. */
  async log(runId: string, taskId: string, tryNumber?: number): Promise<{ attempt: AttemptRecord; text: string }> {
    return this.#logs.text(runId, taskId, tryNumber);
  }

  /** Which attempt's log to show (the given try, or the latest), and where it is. */
  async logOf(runId: string, taskId: string, tryNumber?: number): Promise<{ attempt: AttemptRecord; path: string }> {
    return this.#logs.of(runId, taskId, tryNumber);
  }

  /** Whether an attempt is still running: `idem logs --follow` reads on while it is. */
  async attemptRunning(runId: string, taskId: string, attemptId: number): Promise<boolean> {
    return this.#logs.running(runId, taskId, attemptId);
  }

  /**
   * Bytes [offset, offset + length) of one attempt's log, with the file's size now and whether
   * the attempt has ended (so a reader knows the log can still grow).
   */
  async logRange(runId: string, taskId: string, tryNumber: number, range: { offset: number; length: number }): Promise<LogRange> {
    return this.#logs.range(runId, taskId, tryNumber, range);
  }

  /** This process's reader of the store's change feed, shared by every listener. */
  changeFeed(): ChangeFeed {
    this.#changeFeed ??= new ChangeFeed(this.store, this.clock, this.events);
    return this.#changeFeed;
  }

  // --- operator actions on runs: every one is audited (run-actions.ts) -----------------------------

  /** A manual run for an interval, left to the scheduler's workers (`idem run` runs it here instead). */
  async trigger(pipelineId: string, date: string, request: { openFrozen?: string; params?: Params } & Acting = {}): Promise<RunRecord> {
    return this.#runActions.trigger(pipelineId, date, request);
  }

  /**
   * Runs task instances again, keeping their history and continuing their try numbers: one
   * task (and, optionally, what is downstream or upstream of it), only the failed ones, or all.
   */
  async clear(
    runId: string,
    request: { taskId?: string; downstream?: boolean; upstream?: boolean; failedOnly?: boolean; reason: string; openFrozen?: string; code?: string } & Acting,
  ): Promise<TaskInstanceRecord[]> {
    return this.#runActions.clear(runId, request);
  }

  async skip(runId: string, taskId: string, request: { reason: string } & Acting): Promise<TaskInstanceRecord> {
    return this.#runActions.skip(runId, taskId, request);
  }

  async mark(runId: string, taskId: string, request: { state: "success" | "failed"; reason: string } & Acting): Promise<TaskInstanceRecord> {
    return this.#runActions.mark(runId, taskId, request);
  }

  // --- the schedule: pause, preview, the ledger, why (scheduling.ts) -------------------------------

  /** With `stop`, the pipeline's external tasks that wait on remote jobs are skipped and their jobs cancelled (stop-remote-jobs.ts). */
  async pause(pipelineId: string, request: { note?: string; stop?: boolean } & Acting = {}): Promise<PipelineState> {
    const state = await this.#scheduling.setPaused(pipelineId, true, request);
    if (request.stop) await (await import("./stop-remote-jobs.ts")).stopRemoteJobs(this, pipelineId, request);
    return state;
  }

  async unpause(pipelineId: string, request: { note?: string } & Acting = {}): Promise<PipelineState> {
    return this.#scheduling.setPaused(pipelineId, false, request);
  }

  /** The pipeline's scheduling state (paused, by whom, the schedule cursor). */
  async pipelineState(pipelineId: string): Promise<PipelineState> {
    return this.#scheduling.state(pipelineId);
  }

  /** The next `count` runs the schedule will create after now. */
  preview(pipelineId: string, count: number): Due[] {
    return this.#scheduling.preview(pipelineId, count);
  }

  /** What a scheduler starting now will do for each pipeline, one line each: catch-up and next fire (`scheduler/outlook.ts`). */
  async schedulerOutlook(): Promise<string[]> {
    return this.#scheduling.outlook();
  }

  /** What the pipeline's `restate` window adds to each scheduled interval, from recent durations; null without one. */
  async restateEstimate(pipelineId: string): Promise<RestateEstimate | null> {
    return this.#scheduling.restateEstimate(pipelineId);
  }

  /** The ledger of expected runs over [from, to), default the last `limit` intervals that fired. */
  async expected(pipelineId: string, range: { from?: string; to?: string; limit?: number } = {}): Promise<ExpectedRun[]> {
    return this.#scheduling.expected(pipelineId, range);
  }

  /** Why a run (or one task of it) is not running, in words; also for a run that does not exist yet. */
  async why(runId: string, taskId?: string): Promise<string[]> {
    const lines = await this.#scheduling.why(runId, taskId);
    return taskId || !(await this.store.getRun(runId)) ? lines : [...lines, ...codeLines(runId, await this.codeStanding(runId))];
  }

  /** A pipeline's code versions, oldest first, with the runs pinned to each (docs/versions.md). */
  async codeVersions(pipelineId: string): Promise<CodeVersionUse[]> {
    return this.store.listCodeVersions(pipelineId);
  }

  /** Removes the pipeline's bundles no run, window or retention rule needs (bundle-collection.ts). */
  async collectBundles(pipelineId: string, request: Acting & { retention?: Partial<BundleRetention> } = {}): Promise<BundleCollection> {
    const { audit, ...done } = await collectBundles(this.store, this.clock, pipelineId, {
      actor: request.actor ?? defaultActor(), reason: request.reason ?? null, retention: request.retention, auditIfNone: true,
    });
    if (audit) tellAudit(request, audit);
    return done;
  }

  /** The graph and source differences between two of the pipeline's code versions (code-diff.ts). */
  async codeDiff(pipelineId: string, from: string, to: string): Promise<CodeDiff> {
    return codeDiff(this.store, pipelineId, from, to);
  }

  /** One of the pipeline's code versions, named in full or by a prefix that names one, with the runs pinned to it. */
  async codeVersion(pipelineId: string, given: string): Promise<CodeVersionUse> {
    return pickCodeVersion(await this.store.listCodeVersions(pipelineId), pipelineId, given);
  }

  /** The code version of the pipeline as loaded now: what a new run is pinned to (null: its file could not be bundled). */
  latestCodeVersion(pipelineId: string): string | null {
    return codeOf(this.pipeline(pipelineId))?.codeVersion ?? null;
  }

  /** The run's code version, the pipeline's latest, and what keeps the run from moving to it (records/code-choice.ts). */
  async codeStanding(runId: string): Promise<CodeStanding> {
    return this.#runCode.standing(runId);
  }

  /** Records, audited, that a run the latest code differs from finishes on its own code (run-code.ts); moving it is `clear` with code latest. */
  async keepRunCode(runId: string, request: { reason: string } & Acting): Promise<AuditEntry> {
    return this.#runCode.keepOwn(runId, request);
  }

  // --- frozen periods (frozen-periods.ts) ----------------------------------------------------------

  /** Frozen periods that apply to the pipeline: its own and the project's. */
  frozenPeriods(pipelineId: string): FrozenPeriod[] {
    return this.#frozen.of(pipelineId);
  }

  /** The frozen periods of a pipeline, each with where it is declared, and the recorded changes to them, newest first. */
  async frozenReport(pipelineId: string, limit = 10): Promise<{ periods: (FrozenPeriod & { declaredIn: "pipeline" | "project" })[]; changes: AuditEntry[] }> {
    return this.#frozen.report(pipelineId, limit);
  }

  // --- pools (pools.ts) ----------------------------------------------------------------------------

  async pools(): Promise<PoolUsage[]> {
    return this.#pools.list();
  }

  async setPool(name: string, slots: number, request: { description?: string } & Acting = {}): Promise<void> {
    return this.#pools.set(name, slots, request);
  }

  async deletePool(name: string, request: Acting = {}): Promise<void> {
    return this.#pools.delete(name, request);
  }

  // --- backfills (backfills.ts) --------------------------------------------------------------------

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

  /** A backfill's plan, one item per business date, in execution order. */
  async backfillItems(backfillId: string): Promise<BackfillItem[]> {
    return this.#backfills.items(backfillId);
  }

  async controlBackfill(backfillId: string, action: "pause" | "resume" | "cancel", request: Acting = {}): Promise<BackfillRecord> {
    return this.#backfills.control(backfillId, action, request);
  }

  // --- datasets and watermarks (datasets.ts, watermarks.ts) ----------------------------------------

  /** Datasets the loaded pipelines name: who produces and publishes each, who waits on it, its promise. */
  datasets(): DatasetInfo[] {
    return this.#datasets.list();
  }

  /** A producer outside idem says a dataset is ready for a business date; data triggers take it as a publication. */
  async emitDatasetEvent(dataset: string, request: DatasetEventRequest): Promise<EmittedDatasetEvent> {
    return this.#datasets.emit(dataset, request);
  }

  /** Why a signed dataset webhook request is refused (no webhook, no secret, a signature that does not hold), or null. */
  datasetWebhookRefusal(request: { signature: string | undefined; body: string }): WebhookRefusal | null {
    return this.#datasets.webhookRefusal(request);
  }

  async datasetEventsPage(query: { dataset?: string; limit: number; after?: number }): Promise<Page<DatasetEvent, number>> {
    return this.#datasets.eventsPage(query);
  }

  /** Saved watermarks of incremental loads, by pipeline then task. */
  async watermarks(pipelineId?: string): Promise<WatermarkRecord[]> {
    return this.#watermarks.list(pipelineId);
  }

  /**
   * Sets a task's watermark by hand (to reload from an earlier point, say), audited; refused
   * while a live run still has that task to finish. The value keeps the saved one's type.
   */
  async setWatermark(pipelineId: string, taskId: string, text: string, request: { reason: string; actor?: string }): Promise<{ previous: string | number | null; value: string | number }> {
    return this.#watermarks.set(pipelineId, taskId, text, request);
  }

  // --- the watch: freshness, the watchdog, alerts and incidents (watch.ts, incidents.ts) -----------

  /** Per promised dataset: newest published date, its status against the deadline, the last days; and whether the checker lives. */
  async freshness(days = 7): Promise<FreshnessReport> {
    return this.#watch.freshness(days);
  }

  /**
   * The watchdog for this process: every idem process that stays up (scheduler, worker, `idem
   * serve`) runs one, and the checker lease lets one pass at a time. `role` names the process
   * for `idem health` ("worker", "serve").
   */
  watchdog(role: string): Watchdog {
    return this.#watch.watchdog(role);
  }

  /**
   * Sends a test message through the notifier `name`, as an alert goes (`idem alerts test`):
   * its kind when it went out; an error naming the notifier and the cause when it did not.
   */
  async testNotifier(name: string): Promise<{ notifier: string; kind: string }> {
    return this.#watch.testNotifier(name);
  }

  /** A page of alerts queued for incidents, newest first: notifier, open or resolve, queued / failed / sent, tries, last error. */
  async alertsPage(query: { pipelineId?: string; incidentKey?: string; state?: AlertState; limit: number; after?: number }): Promise<Page<AlertRecord, number>> {
    return this.#pages.alerts(query);
  }

  /** Incidents, newest first, each with its state now (open, acknowledged, resolved). */
  async incidents(query: { open?: boolean; limit?: number } = {}): Promise<IncidentView[]> {
    return this.#incidents.list(query);
  }

  async incidentsPage(query: { open?: boolean; limit: number; after?: { openedAt: number; key: string } }): Promise<Page<IncidentView, { openedAt: number; key: string }>> {
    return this.#incidents.viewPage(await this.#pages.incidents(query));
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

  // --- health: the checker, the scheduler's lease, workers (health.ts) -----------------------------

  /** Who runs the checker, how fresh its last pass is, and whether a scheduler leads. */
  async health(): Promise<CheckerHealth> {
    return this.#health.checker();
  }

  /**
   * Is this installation healthy: the scheduler's checker alive, and every pipeline file loaded?
   * Every surface (CLI, HTTP) shows this; `brokenFiles` are those this process sees.
   */
  async installationHealth(): Promise<Health> {
    return this.#health.installation();
  }

  /** Workers that have sent a heartbeat, with whether they look alive now. */
  async workers(): Promise<(WorkerRecord & { alive: boolean })[]> {
    return this.#health.workers();
  }

  /** Who holds the scheduler's leader lease, and whether it is current. */
  async leadership(): Promise<{ holder: string; term: number; expiresAt: number; renewedAt: number; current: boolean } | null> {
    return this.#health.leadership();
  }

  // --- API tokens: the HTTP surface's credentials (tokens.ts) --------------------------------------

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
}
