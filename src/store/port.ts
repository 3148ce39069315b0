import type { AttemptState, RunState, TaskState, TriggerKind } from "../core/model/states.ts";
import type { TriggerRule } from "../core/policy/trigger-rules.ts";

/**
 * The state store as the engine sees it: operations named for what they mean, each one
 * transaction. Adapters (SQLite, PostgreSQL) implement it; one contract suite tests them all.
 * Times are epoch milliseconds; the store never reads a clock of its own.
 */
export interface Store {
  /** Brings the schema to the latest version. Safe to call on every start. */
  migrate(): Promise<void>;
  close(): Promise<void>;

  /** Records a graph version and its edges; a no-op when the version is already known. */
  savePipelineVersion(version: NewPipelineVersion): Promise<void>;
  getPipelineVersion(pipelineId: string, version: string): Promise<PipelineVersionRecord | null>;

  /** The one way runs come to exist: at most one per (pipeline, interval), whoever asks. */
  createRunIfAbsent(run: NewRun): Promise<{ run: RunRecord; created: boolean }>;
  /**
   * Runs a run again: task instances are reset (all of them, or `taskIds` and nothing else),
   * keeping their try numbers, so history stays. Refused while an attempt of the run is running.
   */
  rerun(request: RerunRequest): Promise<RunRecord>;

  /** Takes up to `limit` eligible task instances, starting an attempt (with a lease) for each. */
  claimReady(request: ClaimRequest): Promise<ClaimedAttempt[]>;
  /** Extends a running attempt's lease; false when the attempt is no longer this worker's. */
  renewLease(attemptId: number, workerId: string, leaseExpiresAt: number): Promise<boolean>;
  /**
   * Records how an attempt ended and, in the same transaction, makes downstream task instances
   * eligible (or skipped / upstream_failed) and finishes the run when nothing is left.
   * A stale attempt (finished, lost, or another worker's) is refused: `accepted` is false.
   */
  finishAttempt(finish: AttemptFinish): Promise<FinishOutcome>;

  getRun(runId: string): Promise<RunRecord | null>;
  listRuns(query: RunQuery): Promise<RunRecord[]>;
  listTaskInstances(runId: string): Promise<TaskInstanceRecord[]>;
  listAttempts(runId: string, taskId?: string): Promise<AttemptRecord[]>;
  /** Earliest time a waiting retry of this run becomes due, or null. */
  nextRetryAt(runId: string): Promise<number | null>;

  /** Records a manual action and hands back the entry as stored (with its id). */
  appendAudit(entry: NewAuditEntry): Promise<AuditEntry>;
  listAudit(query: AuditQuery): Promise<AuditEntry[]>;

  // --- scheduling -------------------------------------------------------------------------

  /** The pipeline's scheduling state; created (unpaused) the first time it is asked for. */
  pipelineState(pipelineId: string, at: number): Promise<PipelineState>;
  setPaused(request: PauseRequest): Promise<PipelineState>;
  /** Runs of the pipeline that are queued or running. */
  countLiveRuns(pipelineId: string): Promise<number>;
  /**
   * Records intervals a schedule passed over on purpose (catch-up "latest"), so the ledger of
   * expected runs shows them as skipped by policy, and moves the cursor past them.
   */
  skipIntervals(request: SkipIntervalsRequest): Promise<void>;
  /** Runs and skipped intervals whose start lies in [from, to): the ledger's raw material. */
  ledger(pipelineId: string, from: number, to: number): Promise<{ runs: RunRecord[]; skipped: SkippedInterval[] }>;

  // --- pools ------------------------------------------------------------------------------

  setPool(pool: { name: string; slots: number; description?: string | null; at: number }): Promise<void>;
  /** Creates the pools that do not exist yet; never changes one an operator has set. */
  ensurePools(pools: readonly { name: string; slots: number }[], at: number): Promise<void>;
  deletePool(name: string): Promise<boolean>;
  listPools(): Promise<PoolUsage[]>;

  // --- workers, leases, leadership ----------------------------------------------------------

  heartbeatWorker(worker: { workerId: string; host: string; pid: number; concurrency: number; at: number }): Promise<void>;
  removeWorker(workerId: string): Promise<void>;
  listWorkers(): Promise<WorkerRecord[]>;
  /** Running attempts whose lease ran out before `now`: their worker is presumed dead. */
  listExpiredAttempts(now: number, limit: number): Promise<ExpiredAttempt[]>;
  /**
   * Records an expired attempt as lost: a failed try, retried under the task's policy at
   * `retryAt` (null: no tries left or no retry). Fenced: refused unless the lease really expired.
   */
  loseAttempt(request: { attemptId: number; now: number; retryAt: number | null }): Promise<FinishOutcome>;
  /**
   * Takes or keeps the lease of a role ("scheduler"): granted when free, expired, or already
   * ours. A new holder gets a higher term: how a watcher tells that leadership changed hands
   * (`LeadMemory`) and what `idem health` shows. No write takes the term: a deposed leader's
   * writes are harmless by construction (one run per interval, a cursor that only moves forward,
   * losses fenced by the lease itself), so there is nothing for a term to fence.
   */
  tryLead(request: { role: string; holder: string; now: number; ttlMs: number }): Promise<Leadership>;
  resignLead(role: string, holder: string): Promise<void>;
  getLead(role: string): Promise<Leadership | null>;

  // --- datasets ---------------------------------------------------------------------------

  /**
   * Reads dataset events newer than the pipeline's cursor for the datasets it waits on, keeps
   * the newest per (business date, dataset), and returns each business date with the datasets
   * that have an unconsumed event for it.
   */
  collectDatasetEvents(pipelineId: string, datasets: readonly string[]): Promise<Map<string, Set<string>>>;
  /** Forgets the events that triggered a run for this business date. */
  consumeDatasetWaits(pipelineId: string, businessDate: string): Promise<void>;
  listDatasetEvents(query: { dataset?: string; limit?: number }): Promise<DatasetEvent[]>;

  // --- operator actions -------------------------------------------------------------------

  /** An explicit skip: the task instance ends skipped with the reason, and the skip flows downstream. */
  skipTask(request: TaskActionRequest): Promise<TaskInstanceRecord>;
  /** Sets a task instance's final state by hand (success or failed); downstream follows. */
  markTask(request: TaskActionRequest & { state: "success" | "failed" }): Promise<TaskInstanceRecord>;

  // --- backfills --------------------------------------------------------------------------

  /** Stores a backfill and its plan; an identical live one (same pipeline, range, options) is returned instead. */
  createBackfill(backfill: NewBackfill): Promise<{ backfill: BackfillRecord; created: boolean }>;
  getBackfill(backfillId: string): Promise<BackfillRecord | null>;
  listBackfills(query: { pipelineId?: string; live?: boolean; limit?: number }): Promise<BackfillRecord[]>;
  backfillItems(backfillId: string): Promise<BackfillItem[]>;
  /** The next planned intervals of a backfill that have no run started yet, in plan order. */
  pendingBackfillItems(backfillId: string, limit: number): Promise<BackfillItem[]>;
  markBackfillItemStarted(backfillId: string, seq: number): Promise<void>;
  /** Runs of the backfill that are queued or running. */
  countLiveBackfillRuns(backfillId: string): Promise<number>;
  backfillProgress(backfillId: string): Promise<BackfillProgress>;
  setBackfillState(backfillId: string, state: BackfillState, at: number): Promise<BackfillRecord>;
  /**
   * Cancels a backfill: nothing new starts; task instances of its runs that are not running end
   * skipped with the reason, and those runs end failed once their running attempts finish.
   */
  cancelBackfill(backfillId: string, reason: string, at: number): Promise<BackfillRecord>;
  /** Durations (ms) of the latest successful attempts of each task, for estimates. */
  taskDurations(pipelineId: string, perTask: number): Promise<Map<string, number[]>>;

  // --- freshness, incidents, alerts ------------------------------------------------------

  /** Published business dates of a dataset in [fromDate, toDate], oldest first. */
  listFreshness(dataset: string, fromDate: string, toDate: string): Promise<FreshnessRecord[]>;
  /** Every publication of one business date, oldest first (a rerun publishes again). */
  freshnessHistory(dataset: string, businessDate: string): Promise<FreshnessPublication[]>;
  /**
   * Opens an incident unless one with the same key was ever opened (deduplication survives
   * restarts), queueing one "open" alert per notifier in the same transaction. True if opened.
   */
  openIncident(incident: NewIncident): Promise<boolean>;
  /** Resolves an open incident, queueing one "resolve" alert per notifier. True if it was open. */
  resolveIncident(key: string, at: number, resolution: string): Promise<boolean>;
  listIncidents(query: { open?: boolean; limit?: number }): Promise<Incident[]>;
  /** Alerts not delivered yet whose next attempt is due. */
  dueAlerts(now: number, limit: number): Promise<OutboxAlert[]>;
  recordAlertDelivery(id: number, result: { at: number; error?: string; nextAttemptAt?: number }): Promise<void>;
  /** Runs that ended failed at or after `since`. */
  failedRunsSince(since: number): Promise<RunRecord[]>;

  // --- watermarks -------------------------------------------------------------------------

  /** The high-water mark an incremental load saved for this pipeline and task, or null. */
  getWatermark(pipelineId: string, taskId: string): Promise<string | number | null>;
  /** Stores it; the caller (the incremental loader) only ever moves it forward. */
  saveWatermark(pipelineId: string, taskId: string, value: string | number, at: number): Promise<void>;

  // --- wake-ups -----------------------------------------------------------------------------

  /**
   * Calls `onWork` soon after any process makes work eligible (a run created, a task finished,
   * an attempt handed back), so idle workers need not poll fast. Adapters without a channel of
   * their own (SQLite) leave it out; the engine then watches a file in the state directory.
   */
  watchWork?(onWork: () => void): Promise<() => Promise<void>>;

  // --- API tokens -------------------------------------------------------------------------

  /** Stores a token by its hash. Refused (StoreConflictError) while a live token has that name. */
  createToken(token: NewApiToken): Promise<ApiTokenRecord>;
  /** The live token with this hash; null when unknown or revoked. */
  findToken(tokenHash: string): Promise<ApiTokenRecord | null>;
  /** Live tokens by name; with `includeRevoked`, revoked ones too (newest first after the live). */
  listTokens(query: { includeRevoked?: boolean }): Promise<ApiTokenRecord[]>;
  /** Revokes the live token of that name; null when there is none. */
  revokeToken(request: { name: string; by: string; at: number }): Promise<ApiTokenRecord | null>;
  /** True while at least one live token exists. */
  hasTokens(): Promise<boolean>;

  // --- the change feed --------------------------------------------------------------------

  /**
   * Changes of runs, task instances and incidents with an id above `afterId`, oldest first. The
   * store writes them in the same transaction as the change, keeps the newest 100,000 or so, and
   * joins in the run's pipeline and business date (or the incident's) when read.
   */
  readChanges(afterId: number, limit: number): Promise<ChangeEvent[]>;
  /** The newest change id (0 before the first) and the oldest one still kept (null when none is). */
  changeBounds(): Promise<{ newest: number; oldest: number | null }>;
  /** Calls `onChange` soon after any process commits a change, where the adapter has a channel (PostgreSQL). */
  watchChanges?(onChange: () => void): Promise<() => Promise<void>>;

  // --- pages of history ---------------------------------------------------------------------

  /** One page of a pipeline's runs, newest interval first: an index range scan, never a count. */
  pageRuns(query: RunPageQuery): Promise<RunRecord[]>;
  /** The task instances of these runs (a grid's cells), in one query. */
  taskInstancesOfRuns(runIds: readonly string[]): Promise<TaskInstanceRecord[]>;
  /** One page of the audit log, newest first. */
  pageAudit(query: AuditPageQuery): Promise<AuditEntry[]>;
  /** One page of dataset events, newest first. */
  pageDatasetEvents(query: { dataset?: string; beforeId?: number; limit: number }): Promise<DatasetEvent[]>;
  /** One page of incidents, newest opened first (ties by key). */
  pageIncidents(query: { open?: boolean; before?: { openedAt: number; key: string }; limit: number }): Promise<Incident[]>;
  /** Every watermark, or a pipeline's. */
  listWatermarks(pipelineId?: string): Promise<WatermarkRecord[]>;

  // --- restatements ---------------------------------------------------------------------------

  /**
   * Records on a run why the schedule did not restate it after the interval starting at
   * `headStart` (a frozen period). True the first time for that head; false when already noted.
   */
  noteRestateRefusal(request: { runId: string; headStart: number; note: string }): Promise<boolean>;

  // --- watermarks by hand ---------------------------------------------------------------------

  /**
   * Sets a watermark by hand, in one transaction with the check that no live run (queued or
   * running) of the pipeline still has that task to finish; when one has, nothing is written
   * and that run is named. The caller audits it.
   */
  setWatermarkByHand(request: { pipelineId: string; taskId: string; value: string | number; at: number }): Promise<
    { set: true; previous: string | number | null } | { set: false; liveRunId: string }
  >;

  // --- frozen periods as recorded -------------------------------------------------------------

  /** The frozen periods last recorded for a scope (a pipeline id, or "*" for the project); null before the first. */
  recordedFrozenPeriods(scope: string): Promise<RecordedFrozenPeriods | null>;
  /**
   * Records a scope's frozen periods and, in the same transaction, the audit entry of the change,
   * only while the recorded text is still `expected` (null: nothing recorded yet). Null when
   * another process recorded first: read again and decide again.
   */
  recordFrozenPeriods(request: RecordFrozenPeriods): Promise<AuditEntry | null>;

  // --- the scheduler's wake-ups ---------------------------------------------------------------

  /**
   * Calls `onWake` soon after any process changes what the scheduler acts on: a run ended (the
   * run cap has room; a restatement or a backfill may go on), a dataset was published, a
   * backfill was requested or changed state, a pipeline was paused or resumed. Not after every
   * task's finish. Adapters without a channel of their own (SQLite) leave it out; the engine
   * then watches a file in the state directory, which workers and the engine's actions touch.
   */
  watchScheduling?(onWake: () => void): Promise<() => Promise<void>>;
}

export interface RecordedFrozenPeriods {
  scope: string;
  /** The periods as JSON text, in the engine's canonical form (compared as text). */
  periods: string;
  graphVersion: string | null;
  recordedAt: number;
}

export interface RecordFrozenPeriods {
  scope: string;
  expected: string | null;
  periods: string;
  graphVersion: string | null;
  at: number;
  audit: NewAuditEntry;
}

export type TokenRole = "viewer" | "operator";

export interface NewApiToken {
  /** SHA-256 of the secret, hex. */
  tokenHash: string;
  name: string;
  role: TokenRole;
  createdBy: string;
  at: number;
}

export interface ApiTokenRecord {
  tokenHash: string;
  name: string;
  role: TokenRole;
  createdAt: number;
  createdBy: string;
  revokedAt: number | null;
  revokedBy: string | null;
}

export interface ChangeEvent {
  id: number;
  kind: "run" | "task" | "incident";
  /** The run's or task instance's new state; "open" or "resolved" for an incident. */
  state: string;
  runId: string | null;
  taskId: string | null;
  tryNumber: number | null;
  pipelineId: string | null;
  businessDate: string | null;
  incidentKey: string | null;
  incidentKind: IncidentKind | null;
  dataset: string | null;
}

export interface RunPageQuery {
  pipelineId: string;
  states?: readonly RunState[];
  triggers?: readonly TriggerKind[];
  /** Runs whose interval starts at or after this. */
  fromStart?: number;
  /** Runs whose interval starts before this. */
  toStart?: number;
  /** The cursor: runs whose interval starts strictly before this. */
  beforeStart?: number;
  limit: number;
}

export interface AuditPageQuery {
  pipelineId?: string;
  actor?: string;
  action?: string;
  fromAt?: number;
  toAt?: number;
  /** The cursor: entries with a smaller id. */
  beforeId?: number;
  limit: number;
}

export interface WatermarkRecord {
  pipelineId: string;
  taskId: string;
  value: string | number;
  updatedAt: number;
}

export const MAX_SUMMARY_BYTES = 64 * 1024;

export interface NewPipelineVersion {
  pipelineId: string;
  version: string;
  definition: Record<string, unknown>;
  edges: readonly { parent: string; child: string }[];
  createdAt: number;
}

export interface PipelineVersionRecord {
  pipelineId: string;
  version: string;
  definition: Record<string, unknown>;
  createdAt: number;
}

export interface NewTaskInstance {
  taskId: string;
  /** Root tasks (no upstream) are eligible at once. */
  hasUpstream: boolean;
  triggerRule: TriggerRule;
  /** 1 + retries. */
  maxTries: number;
  pool: string | null;
  slots: number;
  priority: number;
}

export interface NewRun {
  backfillId?: string;
  /** With a scheduled run: the pipeline's schedule cursor moves here in the same transaction. */
  cursor?: number;
  runId: string;
  pipelineId: string;
  intervalStart: number;
  intervalEnd: number;
  businessDate: string;
  graphVersion: string;
  trigger: TriggerKind;
  triggeredBy: string | null;
  reason: string | null;
  params: Record<string, unknown>;
  tasks: readonly NewTaskInstance[];
  createdAt: number;
}

export interface RerunRequest {
  /** A backfill taking over an existing run: the run becomes part of it. */
  backfill?: { backfillId: string; triggeredBy: string; reason: string };
  runId: string;
  graphVersion: string;
  /** The tasks of that graph version; instances of tasks no longer in it are removed. */
  tasks: readonly NewTaskInstance[];
  /** Reset only these (default: every task instance). */
  taskIds?: readonly string[];
  params: Record<string, unknown>;
  at: number;
  /**
   * The schedule restating the run (its trailing window): refused unless the run has ended,
   * and ended before `endedBefore` (when the newer interval fired), so two schedulers or a
   * restart cannot restate it twice for one interval. The run's trigger becomes "restate" and
   * its restate count grows; its task instances are claimed after live runs', as a backfill's.
   */
  restate?: { triggeredBy: string; reason: string; endedBefore: number };
}

export interface RunRecord {
  runId: string;
  pipelineId: string;
  intervalStart: number;
  intervalEnd: number;
  businessDate: string;
  state: RunState;
  trigger: TriggerKind;
  triggeredBy: string | null;
  reason: string | null;
  graphVersion: string;
  params: Record<string, unknown>;
  createdAt: number;
  startedAt: number | null;
  endedAt: number | null;
  backfillId: string | null;
  /** How often the schedule has restated the run, and when it last started doing so. */
  restateCount: number;
  restatedAt: number | null;
  /** Why the latest restatement the schedule wanted did not happen (a frozen period), if so. */
  restateNote: string | null;
}

export interface TaskInstanceRecord {
  runId: string;
  taskId: string;
  state: TaskState;
  tryNumber: number;
  maxTries: number;
  nextTryAt: number | null;
  triggerRule: TriggerRule;
  pool: string | null;
  slots: number;
  priority: number;
  /** Why it was skipped or marked upstream_failed. */
  reason: string | null;
  startedAt: number | null;
  endedAt: number | null;
}

export interface ClaimLimits {
  /** Task instances running at once across everything (all workers, all pipelines). */
  parallelism?: number;
  /** Per pipeline: task instances running at once across its runs. */
  maxActiveTasks?: Readonly<Record<string, number>>;
  /**
   * A queued task that has waited this long for pool slots reserves them: smaller tasks stop
   * jumping ahead of it in that pool, so it cannot starve. Default 60 s.
   */
  starvationMs?: number;
}

export interface ClaimRequest {
  limits?: ClaimLimits;
  workerId: string;
  pid: number;
  limit: number;
  now: number;
  leaseMs: number;
  /** Claim only from this run (an in-process `idem run`). */
  runId?: string;
  /** Claim only from this backfill's runs (`idem backfill` running one with no scheduler about). */
  backfillId?: string;
  /** Where the attempt's log goes; stored on the attempt. */
  logPath: (runId: string, taskId: string, tryNumber: number) => string;
  /** Claim only task instances of these pipelines: the ones the worker has loaded. */
  pipelineIds?: readonly string[];
}

export interface ClaimedAttempt {
  attemptId: number;
  runId: string;
  pipelineId: string;
  taskId: string;
  tryNumber: number;
  maxTries: number;
  intervalStart: number;
  intervalEnd: number;
  businessDate: string;
  graphVersion: string;
  params: Record<string, unknown>;
  logPath: string;
  leaseExpiresAt: number;
  /** When the task instance first started in this run (a sensor's timeout counts from here). */
  firstStartedAt: number;
  trigger: TriggerKind;
  backfillId: string | null;
}

export interface AttemptFinish {
  attemptId: number;
  workerId: string;
  now: number;
  /** "rescheduled": a sensor poked and its condition is not met yet; poke again at `retryAt`. */
  outcome: "success" | "failed" | "skipped" | "rescheduled";
  /** Datasets the task produces: on success an event (dataset, business date, run) is recorded. */
  datasets?: readonly string[];
  /** Datasets the task publishes: on success their freshness row for the business date is upserted. */
  publishes?: readonly { dataset: string; emptyReason: string | null }[];
  /** False for data errors: no try is left to them whatever the policy says. */
  retryable: boolean;
  /** When the next try may start, if the task has tries left. */
  retryAt: number | null;
  exitCode: number | null;
  errorClass: string | null;
  errorMessage: string | null;
  /** Serialized summary JSON; at most MAX_SUMMARY_BYTES. */
  summary: string | null;
  skipReason: string | null;
}

export interface FinishOutcome {
  accepted: boolean;
  taskState: TaskState | null;
  runState: RunState | null;
}

export interface AttemptRecord {
  attemptId: number;
  runId: string;
  taskId: string;
  tryNumber: number;
  state: AttemptState;
  workerId: string;
  pid: number | null;
  startedAt: number;
  endedAt: number | null;
  leaseExpiresAt: number | null;
  exitCode: number | null;
  errorClass: string | null;
  errorMessage: string | null;
  logPath: string;
  summary: Record<string, unknown> | null;
}

export interface RunQuery {
  pipelineId?: string;
  limit?: number;
  states?: readonly RunState[];
}

export interface NewAuditEntry {
  at: number;
  actor: string;
  action: string;
  pipelineId: string | null;
  runId?: string | null;
  taskId?: string | null;
  reason?: string | null;
  graphVersion?: string | null;
  details?: Record<string, unknown>;
}

export interface AuditEntry extends Required<Omit<NewAuditEntry, "details">> {
  id: number;
  details: Record<string, unknown>;
}

export interface AuditQuery {
  pipelineId?: string;
  limit?: number;
}

export interface PipelineState {
  pipelineId: string;
  paused: boolean;
  pausedNote: string | null;
  pausedBy: string | null;
  pausedAt: number | null;
  /** End of the last scheduled interval accounted for, or null before the first. */
  scheduleCursor: number | null;
  /** When the store first saw the pipeline: a schedule without `start` begins here. */
  createdAt: number;
}

export interface PauseRequest {
  pipelineId: string;
  paused: boolean;
  note: string | null;
  actor: string;
  at: number;
}

export interface SkipIntervalsRequest {
  pipelineId: string;
  intervals: readonly { start: number; end: number; businessDate: string }[];
  reason: string;
  at: number;
  cursor: number;
}

export interface SkippedInterval {
  pipelineId: string;
  intervalStart: number;
  intervalEnd: number;
  businessDate: string;
  reason: string;
  at: number;
}

export interface PoolUsage {
  name: string;
  slots: number;
  used: number;
  description: string | null;
  holders: { runId: string; taskId: string; slots: number; workerId: string | null }[];
}

export interface WorkerRecord {
  workerId: string;
  host: string;
  pid: number;
  concurrency: number;
  startedAt: number;
  lastSeen: number;
}

export interface ExpiredAttempt {
  attemptId: number;
  runId: string;
  pipelineId: string;
  taskId: string;
  tryNumber: number;
  workerId: string;
  leaseExpiresAt: number;
}

export interface Leadership {
  role: string;
  leader: boolean;
  holder: string;
  term: number;
  expiresAt: number;
  /** When the holder last renewed: the scheduler's heartbeat. */
  renewedAt: number;
}

export interface FreshnessRecord {
  dataset: string;
  businessDate: string;
  publishedAt: number;
  firstPublishedAt: number;
  pipelineId: string;
  runId: string;
  taskId: string;
  summary: Record<string, unknown> | null;
  /** Declared empty (no rows, on purpose), with the reason. */
  emptyReason: string | null;
}

export interface FreshnessPublication {
  dataset: string;
  businessDate: string;
  publishedAt: number;
  runId: string;
  emptyReason: string | null;
  /** How the publishing run was triggered ("restate": a republication by the trailing window); null for old rows. */
  trigger: TriggerKind | null;
  /** The publishing task's summary: what it wrote. */
  summary: Record<string, unknown> | null;
}

export type IncidentKind = "late" | "sla_missed" | "late_publication" | "did_not_run" | "run_failed" | "restate_failed" | "scheduler_down";

export interface NewIncident {
  key: string;
  kind: IncidentKind;
  dataset: string | null;
  pipelineId: string | null;
  businessDate: string | null;
  runId: string | null;
  message: string;
  /** Notifier names to alert. */
  notify: readonly string[];
  at: number;
}

export interface Incident extends Omit<NewIncident, "at" | "key"> {
  key: string;
  openedAt: number;
  resolvedAt: number | null;
  resolution: string | null;
}

export interface OutboxAlert {
  id: number;
  incidentKey: string;
  event: "open" | "resolve";
  notifier: string;
  payload: Record<string, unknown>;
  tries: number;
}

export interface DatasetEvent {
  id: number;
  dataset: string;
  businessDate: string;
  runId: string;
  pipelineId: string;
  taskId: string;
  trigger: TriggerKind;
  at: number;
}

export interface TaskActionRequest {
  runId: string;
  taskId: string;
  reason: string;
  at: number;
}

export type BackfillState = "running" | "paused" | "completed" | "failed" | "cancelled";
export type BackfillAction = "create" | "rerun" | "leave" | "refuse";

export interface NewBackfillItem {
  businessDate: string;
  intervalStart: number;
  intervalEnd: number;
  action: BackfillAction;
  why: string;
  runId: string;
}

export interface BackfillItem extends NewBackfillItem {
  backfillId: string;
  seq: number;
  started: boolean;
}

export interface NewBackfill {
  backfillId: string;
  pipelineId: string;
  fromDate: string;
  toDate: string;
  reprocess: "none" | "failed" | "all";
  maxActiveRuns: number;
  backwards: boolean;
  /** Only these tasks run; null: all. */
  taskIds: readonly string[] | null;
  actor: string;
  reason: string;
  graphVersion: string;
  estimate: Record<string, unknown>;
  /** In execution order (already reversed for --backwards). */
  items: readonly NewBackfillItem[];
  at: number;
}

export interface BackfillRecord extends Omit<NewBackfill, "items" | "at"> {
  state: BackfillState;
  createdAt: number;
  updatedAt: number;
  endedAt: number | null;
}

export type { BackfillProgress } from "../core/policy/backfill-progress.ts";
import type { BackfillProgress } from "../core/policy/backfill-progress.ts";

/** Raised by any adapter for a request the store refuses (run busy, summary too large, ...). */
export class StoreConflictError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "StoreConflictError";
  }
}
