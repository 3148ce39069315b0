import type { Temporal } from "temporal-polyfill";
import type { TriggerRule } from "../policy/trigger-rules.ts";
import type { Timetable } from "../time/timetable.ts";
import type { FrozenPeriod } from "../policy/frozen.ts";
import type { FreshnessPromise, FreshnessPromiseInput } from "./promise.ts";
import type { RestatePolicy } from "../policy/restate.ts";
import type { SeverityOverride } from "../model/incidents.ts";

/** A small JSON object a task returns: counts, not data. */
export type Summary = Record<string, unknown>;

export interface TaskLogger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** The summary a task function returns, for typing `ctx.upstream`: `SummaryOf<typeof loadDay>`. */
export type SummaryOf<F extends (...args: never[]) => unknown> = Exclude<Awaited<ReturnType<F>>, void | undefined>;

/**
 * A database `ctx.connection(name)` hands out. What one can do is the data plane's to say: it
 * opens connections, and `data/target.ts` merges its `Target` into this interface. So core
 * depends on nothing above it, and task code still gets the whole target.
 */
export interface TaskConnection {}

/**
 * Everything a task needs to know about the work it is doing; never "today". `U` types
 * `ctx.upstream`: `TaskContext<MyParams, { load_day: SummaryOf<typeof loadDay> }>`.
 */
export interface TaskContext<P extends Params = Params, U extends Record<string, Summary> = Record<string, Summary>> {
  runId: string;
  pipelineId: string;
  taskId: string;
  /** The local date of the interval's start in the schedule's time zone: YYYY-MM-DD. */
  businessDate: string;
  interval: { start: Temporal.ZonedDateTime; end: Temporal.ZonedDateTime };
  /** 1 for the first attempt; it keeps counting across retries and reruns. */
  tryNumber: number;
  /**
   * How the run came to exist, or why it runs again: "restate" when the schedule reruns it as
   * part of a trailing window. Watermarks stay still for "manual", "backfill" and "restate"
   * (core/policy/incremental-reads.ts).
   */
  trigger: "schedule" | "manual" | "backfill" | "data" | "restate";
  /** Frozen periods of the pipeline and the project, for loaders to enforce a second time. */
  frozen: readonly FrozenPeriod[];
  /** The state store's watermarks, for incremental loads (`incrementalLoad({ store: ctx.watermarks })`). */
  watermarks: WatermarkAccess;
  params: P;
  /**
   * The summaries the tasks this one runs after (`after`) returned in this run: what a check
   * compares with what the load reported. A task that ended without a summary (a command with
   * no summary file, a skip) is absent.
   */
  upstream: Readonly<Partial<U>>;
  /**
   * A connection named in idem.config.ts (`connections`), opened on first use and closed when
   * the attempt ends.
   */
  connection(name: string): Promise<TaskConnection>;
  log: TaskLogger;
  /** Fires when the attempt times out or the worker shuts down; pass it to anything cancellable. */
  signal: AbortSignal;
  /**
   * The attempt's W3C trace context (`00-<trace id>-<span id>-01`) while idem exports traces
   * (an OTLP endpoint is set), for the task's own spans to join the run's trace; else null.
   */
  traceparent: string | null;
  /** End this attempt as skipped, with a reason shown everywhere the task is shown. */
  skip(reason: string): never;
  /**
   * A mapped instance's key (stable across reruns, backfills and restatements: name what it
   * writes by it), or null for a task that is not mapped. `taskId` stays the task's id.
   */
  mapKey: string | null;
  /** A mapped instance's item, as its list gave it (JSON); undefined for a task that is not mapped. */
  item: unknown;
  /**
   * A mapped task's instances in this run, a page at a time in key order (a reduce reads their
   * summaries): pass the last page's `next` as `after` until it is null. `limit`: 1 to 10,000
   * (default 1,000).
   */
  mapped(taskId: string, page?: { after?: string; limit?: number }): Promise<MappedPage>;
}

/** One page of a mapped task's instances. */
export interface MappedPage {
  instances: { key: string; state: string; summary: Summary | null }[];
  /** The key to pass as `after` for the next page, or null after the last. */
  next: string | null;
}

/** Reads a page of a mapped task's instances of the attempt's run (the worker owns the store). */
export type MappedPages = (taskId: string, after: string | null, limit: number) => Promise<MappedPage>;

export type Params = Record<string, unknown>;

export interface WatermarkAccess {
  get(pipelineId: string, taskId: string): Promise<string | number | null>;
  /** Never moves a watermark backwards. */
  save(pipelineId: string, taskId: string, value: string | number): Promise<void>;
}

export type TaskFunction<P extends Params = Params> = (ctx: TaskContext<P>) => Promise<Summary | void> | Summary | void;

/** Durations are milliseconds or strings like "30s", "5m", "1h30m". */
export type DurationInput = number | string;

export interface TaskPolicyInput {
  retries?: number;
  retryDelay?: DurationInput;
  backoff?: "fixed" | "exponential";
  maxRetryDelay?: DurationInput;
  /** true (10%), false, or a fraction 0..1 of each delay removed at random. */
  jitter?: boolean | number;
  timeout?: DurationInput | null;
  triggerRule?: TriggerRule;
  pool?: string | null;
  slots?: number;
  priority?: number;
}

export interface TaskPolicy {
  retries: number;
  retryDelayMs: number;
  backoff: "fixed" | "exponential";
  maxRetryDelayMs: number;
  jitter: number;
  timeoutMs: number | null;
  triggerRule: TriggerRule;
  pool: string | null;
  slots: number;
  priority: number;
}

interface TaskSpecBase<K extends string> extends TaskPolicyInput {
  /** Tasks that must finish (under the trigger rule) before this one starts. */
  after?: readonly NoInfer<K>[];
  description?: string;
  /** After a timeout: how long a function has to honour its signal, or a command between SIGTERM and SIGKILL. Default 5s. */
  killGrace?: DurationInput;
  /** Datasets this task publishes: on success an event (dataset, business date, run) is recorded. */
  produces?: readonly string[];
  /**
   * The promised dataset this task marks published for the business date, on success and once
   * the promise's completeness holds. A summary with `empty: "<reason>"` declares an empty day.
   */
  publishes?: string;
  /** In a pipeline with `restate`, false leaves this task out of restatements (an export sent once). Default true. */
  restate?: boolean;
}

export interface FunctionTaskSpec<K extends string, P extends Params> extends TaskSpecBase<K> {
  // A method, so that a function typed for its upstream (TaskContext<P, { load: ... }>) fits.
  run(ctx: TaskContext<P>): Promise<Summary | void> | Summary | void;
  /** Run once per item of a list found when the task becomes eligible (fan-out): see docs/mapping.md. */
  map?: MapSpec<K, P>;
}

/**
 * Fan-out: one mapped instance of the task per item, each with its own attempts, retries,
 * timeout, pool slots, log, summary and state, known by a stable key.
 */
export interface MapSpec<K extends string, P extends Params> {
  /**
   * The list: a function of the context, called when the task becomes eligible, or a field of
   * an upstream task's summary (`{ task: "list_files", field: "files" }`; the task must be in `after`),
   * or the keys of a mapped task in `after` (`{ keysOf: "load_file" }`): a per-key chain, each
   * key's instance running as soon as that key's upstream instance succeeds, with its item.
   */
  items: ((ctx: TaskContext<P>) => readonly unknown[] | Promise<readonly unknown[]>) | { task: NoInfer<K>; field: string } | { keysOf: NoInfer<K> };
  /** An item's key; without one, each item must be a string, which is its own key. */
  key?: (item: any) => string;
  /** More items than this fail the task with a data error, expanding none. Default 100,000. */
  maxItems?: number;
  /** At most this many instances of the task live at once (queued, running or waiting to retry); the rest wait in list order. */
  maxActive?: number;
}

/** A mapped task's list, resolved. */
export interface TaskMap {
  items: ((ctx: TaskContext<any>) => readonly unknown[] | Promise<readonly unknown[]>) | { task: string; field: string } | { keysOf: string };
  key: ((item: any) => string) | null;
  maxItems: number;
  maxActive: number | null;
}

/**
 * A SQL task: a statement (or several, `;`-separated), or a `.sql` file, run in one transaction
 * against a connection of idem.config.ts. `$business_date`, `$interval_start`, `$interval_end`
 * (ISO instants), `$run_id` and `$try_number` are bound as parameters, never pasted into the
 * text. The summary is `{ rowsAffected }`. With `check: true` the statement is a query for
 * offending rows: any row makes a data error, which is not retried.
 */
export interface SqlTaskSpec<K extends string> extends TaskSpecBase<K> {
  sql: string | { file: string | URL };
  connection: string;
  check?: boolean;
}

export interface CommandEnvSpec {
  /** false: start from an empty environment (plus `pass`), not the worker's. */
  inherit: boolean;
  /** Variables of the worker's environment to hand on, the state store's included if named. */
  pass?: readonly string[];
  set?: Record<string, string>;
}

export interface CommandTaskSpec<K extends string, P extends Params> extends TaskSpecBase<K> {
  /** argv; the first element is the program. No shell unless you ask for one. */
  command: readonly string[] | ((ctx: TaskContext<P>) => readonly string[]);
  cwd?: string;
  /**
   * Variables for the command. A record adds them to the worker's environment (minus the state
   * store's URL and password); `{ inherit: false, pass: ["PATH"], set: {...} }` gives it only the
   * named variables of the worker's environment and the ones set. A name in `pass` is handed on
   * even when it is the state store's (`{ inherit: true, pass: ["IDEM_STATE_URL"] }`).
   */
  env?: Record<string, string> | CommandEnvSpec;
  /** Exit codes that mean "the data is wrong": the attempt fails with no retry. Default [65] (EX_DATAERR). */
  dataErrorExitCodes?: readonly number[];
}

/** A condition to wait for: true when met. Use the helpers (fileExists, sqlReturnsRow) or any async predicate. */
export type SensorCheck<P extends Params = Params> = (ctx: TaskContext<P>) => Promise<boolean> | boolean;

export interface SensorTaskSpec<K extends string, P extends Params> extends TaskSpecBase<K> {
  sensor: SensorCheck<P>;
  /** Time between pokes. Default 60s. */
  pokeInterval?: DurationInput;
  /** Double the wait after each unmet poke, up to maxPokeInterval. */
  pokeBackoff?: boolean;
  maxPokeInterval?: DurationInput;
  /**
   * Give up this long after the task instance's first start (reschedules and retries do not reset
   * it; a clear does). Giving up fails with SensorTimeout, never retried. Default 24h.
   */
  sensorTimeout?: DurationInput;
  /** On giving up, end as skipped (with a reason) instead of failed. */
  softFail?: boolean;
  /**
   * "reschedule" (default): between pokes the sensor holds no worker and no pool slot.
   * "poke": the attempt stays running and sleeps between pokes.
   */
  mode?: "reschedule" | "poke";
}

/** What the remote engine says of a job when polled. `log`: its last lines, copied into the attempt's log (capped). */
export type ExternalStatus =
  | { state: "running"; log?: string }
  | { state: "succeeded"; summary?: Summary; log?: string }
  /** `dataError`: the job ran and found the data wrong; idem does not retry it. */
  | { state: "failed"; error: string; dataError?: boolean; log?: string };

/**
 * Work that runs elsewhere (a Slurm job, a Databricks run, a Spark application): idem submits it,
 * records the handle before it waits, polls it with no worker slot held, and cancels it on a
 * timeout, a clear or a cancelled backfill. The handle is a small JSON value the remote engine
 * names its job by. `key` is the same for every attempt that may submit the same job
 * (core's `externalJobKey`): hand it to an engine that refuses a duplicate (an idempotency
 * token, a job name), so a submit whose answer was lost does not start a second job.
 */
export interface ExternalJob<H = unknown, P extends Params = Params> {
  /** The adapter's name, shown with the handle (`slurm`, `http`, `spark-submit`); default "custom". */
  adapter?: string;
  submit(ctx: TaskContext<P>, key: string): Promise<H> | H;
  poll(handle: H, ctx: TaskContext<P>): Promise<ExternalStatus> | ExternalStatus;
  /** Ends the job; called for a job idem no longer waits on. Cancelling an ended job must do nothing. */
  cancel(handle: H, ctx: TaskContext<P>): Promise<void> | void;
  /** Where a person can look at the job (its page in the remote engine's UI), if anywhere. */
  link?(handle: H): string | null;
}

export interface ExternalTaskSpec<K extends string, P extends Params> extends TaskSpecBase<K> {
  external: ExternalJob<any, P>;
  /** Time between polls of the remote job. Default 30s. */
  pollInterval?: DurationInput;
  /** Lengthen the wait between polls as the job runs longer, up to maxPollInterval. Default true. */
  pollBackoff?: boolean;
  /** Default 10m. */
  maxPollInterval?: DurationInput;
  /**
   * The remote job occupies the task's `pool` (its `slots`) while it runs: at most pool size /
   * slots such jobs run at once, and the slots come back when the job ends, is cancelled, or the
   * task instance ends. Default false: between polls the task holds no pool slot. Needs a pool.
   */
  holdPoolWhileRemote?: boolean;
  /**
   * Submit one remote job per item of a list (fan-out, docs/mapping.md): each mapped instance
   * submits, polls and is cancelled on its own, under a key that includes its map key.
   */
  map?: MapSpec<K, P>;
}

export type TaskSpec<K extends string = string, P extends Params = Params> =
  | FunctionTaskSpec<K, P>
  | CommandTaskSpec<K, P>
  | SensorTaskSpec<K, P>
  | SqlTaskSpec<K>
  | ExternalTaskSpec<K, P>;

export interface SensorPolicy {
  pokeIntervalMs: number;
  pokeBackoff: boolean;
  maxPokeIntervalMs: number;
  timeoutMs: number;
  softFail: boolean;
  mode: "reschedule" | "poke";
}

/** What every task has, whatever its kind. */
interface TaskBase {
  id: string;
  description: string;
  upstream: readonly string[];
  downstream: readonly string[];
  policy: TaskPolicy;
  killGraceMs: number;
  produces: readonly string[];
  publishes: string | null;
  /** Whether restatements of the pipeline run this task again. */
  restate: boolean;
}

export interface FunctionTask extends TaskBase {
  kind: "function";
  run: TaskFunction<any>;
  /** Fan-out: null for a task that runs once per run. */
  map: TaskMap | null;
}

export interface CommandTask extends TaskBase {
  kind: "command";
  command: CommandTaskSpec<string, any>["command"];
  cwd?: string;
  /** Variables set for the command. */
  env?: Record<string, string>;
  /** Whether the command starts from the worker's environment, and which of its variables it gets if not. */
  envPolicy?: { inherit: boolean; pass: readonly string[] };
  dataErrorExitCodes: readonly number[];
}

/** A statement as written, or a `.sql` file (relative to the project, or absolute). */
export type SqlSource = { text: string; file: null } | { text: null; file: string };

export interface SqlTask extends TaskBase {
  kind: "sql";
  sql: SqlSource;
  connection: string;
  check: boolean;
}

export interface SensorTask extends TaskBase {
  kind: "sensor";
  sensor: SensorCheck<any>;
  sensorPolicy: SensorPolicy;
}

export interface ExternalPolicy {
  pollIntervalMs: number;
  pollBackoff: boolean;
  maxPollIntervalMs: number;
  /** The remote job holds the task's pool slots while it runs, not only the attempts that submit and poll it. */
  holdPoolWhileRemote: boolean;
}

/**
 * A remote job: submitted once, its handle recorded before idem waits, polled between attempts
 * that hold nothing (like a sensor in reschedule mode). `policy.timeoutMs` counts from the
 * submission of the job waited on.
 */
export interface ExternalTask extends TaskBase {
  kind: "external";
  external: ExternalJob<any>;
  externalPolicy: ExternalPolicy;
  /** One remote job per item (fan-out), or null. */
  map: TaskMap | null;
}

/**
 * A task as defined, one member per kind, told apart by `kind`. Code that handles each kind
 * switches on it and ends with `unhandledKind(task)` (kind.ts), so a new member is a compile
 * error wherever it must be handled.
 */
export type TaskDefinition = FunctionTask | CommandTask | SqlTask | SensorTask | ExternalTask;

export type TaskKind = TaskDefinition["kind"];

export type CatchupPolicy = "all" | "latest";

export interface PipelineOptions<P extends Params = Params> {
  /** A timetable (daily(), hourly(), cron(), ...), a cron string (in `timezone`), or "manual". */
  schedule?: Timetable | string;
  /** Zone for a cron string or "manual"; a timetable carries its own. */
  timezone?: string;
  /** First business date (YYYY-MM-DD) or instant the pipeline owns. */
  start?: string;
  /** Last business date (inclusive) or instant (exclusive) it owns. */
  end?: string;
  catchup?: CatchupPolicy;
  defaults?: TaskPolicyInput;
  params?: P;
  description?: string;
  owner?: string;
  /** How urgent its incidents are (did not run, run failed, and its promises' unless they say): one level, or one per kind. */
  severity?: SeverityOverride;
  tags?: readonly string[];
  maxActiveRuns?: number;
  maxActiveTasks?: number;
  /**
   * Datasets this pipeline waits on: it gets a run for business date D once every one of them
   * has a new event for D. Combine with a manual schedule (the default) for a purely data-driven
   * pipeline; its intervals are calendar days in `timezone`.
   */
  triggerOn?: readonly string[];
  /** Business dates no backfill, manual run or loader may rewrite unless opened with a reason. */
  frozen?: readonly FrozenPeriod[];
  /** Freshness promises for datasets this pipeline publishes. */
  promises?: readonly FreshnessPromiseInput[];
  /**
   * Each time the schedule runs interval D, run the `last` intervals before D again (after D,
   * below live runs, under the run cap and pools; frozen dates refused), so rows that arrive
   * late are picked up. Every task must be safe to run twice; opt one out with `restate: false`.
   */
  restate?: RestatePolicy;
}

export interface Pipeline<P extends Params = Params> {
  readonly kind: "idem.pipeline";
  readonly id: string;
  readonly description: string;
  readonly owner: string | null;
  readonly severity: SeverityOverride | null;
  readonly tags: readonly string[];
  readonly schedule: Timetable;
  /** Epoch ms of the first interval start it owns (inclusive), or null. */
  readonly start: number | null;
  /** Epoch ms: intervals starting at or after this are not owned. */
  readonly end: number | null;
  readonly catchup: CatchupPolicy;
  readonly params: P;
  readonly maxActiveRuns: number;
  readonly maxActiveTasks: number;
  readonly triggerOn: readonly string[];
  readonly frozen: readonly FrozenPeriod[];
  readonly promises: readonly FreshnessPromise[];
  /** The trailing window the schedule restates, or null. */
  readonly restate: RestatePolicy | null;
  /** Tasks in a stable topological order. */
  readonly tasks: ReadonlyMap<string, TaskDefinition>;
  /** Stable hash of the definition: tasks, edges, policies, schedule. */
  readonly version: string;
  /** The JSON that `version` hashes; stored with the version. Made anew on each read (the tasks are held once, in `tasks`). */
  readonly definition: Record<string, unknown>;
}
