import type { ErrorClass } from "../../core/model/error-classes.ts";
import type { RunState, TaskState, TriggerKind } from "../../core/model/states.ts";
import type { MappedItem } from "../../core/policy/fan-out.ts";

/**
 * Claims and leases: how a worker takes eligible task instances, keeps their leases, ends their
 * attempts, and how an attempt whose worker died is recorded as lost.
 */
export interface AttemptStore {
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
  /** Running attempts whose lease ran out before `now`: their worker is presumed dead. */
  listExpiredAttempts(now: number, limit: number): Promise<ExpiredAttempt[]>;
  /**
   * Records an expired attempt as lost: a failed try, retried under the task's policy at
   * `retryAt` (null: no tries left or no retry). Fenced: refused unless the lease really expired.
   */
  loseAttempt(request: { attemptId: number; now: number; retryAt: number | null }): Promise<FinishOutcome>;
  /**
   * Calls `onWork` soon after any process makes work eligible (a run created, a task finished,
   * an attempt handed back), so idle workers need not poll fast. Adapters without a channel of
   * their own (SQLite) leave it out; the engine then watches a file in the state directory.
   * With `workerId`, what that worker's own calls announce for the others (a `finishAndClaim`
   * whose claim may have left work, a claim that passed rows over) does not call it: the worker
   * claims again by itself when it has room.
   */
  watchWork?(onWork: () => void, workerId?: string): Promise<() => Promise<void>>;
  /**
   * Extends the leases of several of this worker's running attempts in one statement (one per
   * heartbeat, however many attempts the worker holds); answers the ids renewed. An id missing
   * from the answer is no longer this worker's running attempt (finished, or recorded lost).
   */
  renewLeases(workerId: string, attemptIds: readonly number[], leaseExpiresAt: number): Promise<number[]>;
  /**
   * A worker's finishes and its next claim in one transaction (one commit): records `finishes`
   * as `finishAttempt` would, in order (each fenced: a stale one is refused, `accepted: false`,
   * and stops nothing), then claims as `claimReady(claim)` would, seeing what they did: the
   * tasks they made eligible are claimable, the pool slots and caps they freed count as free.
   * `claim` null: the finishes only. `outcomes` are in the order of `finishes`. On PostgreSQL
   * the other workers are notified only when the claim may have left them work
   * (core's `othersMayFindWork`); the caller claims what the finishes made eligible itself.
   */
  finishAndClaim(request: FinishAndClaim): Promise<FinishedAndClaimed>;
}

export interface FinishAndClaim {
  finishes: readonly AttemptFinish[];
  claim: ClaimRequest | null;
}

export interface FinishedAndClaimed {
  outcomes: FinishOutcome[];
  claimed: ClaimedAttempt[];
}

export const MAX_SUMMARY_BYTES = 64 * 1024;

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
  /**
   * The folder the claiming worker keeps attempt logs in: each attempt's log path,
   * `attemptLogPath(logDir, run, task, try)` (core/model/log-path.ts), is stored on the attempt.
   */
  logDir: string;
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
  /** When the task instance became ready to claim (queued, or its retry due): its queue wait ends with the claim. */
  readySince: number | null;
  /** The code version (bundle) the run is pinned to, null for a run made without one: the attempt runs that code. */
  codeVersion: string | null;
  /** A mapped instance's key and item (JSON text), from its task's list; null for any other task instance. */
  mapKey: string | null;
  mapItem: string | null;
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
  /** One of idem's closed set (core/model/error-classes.ts). */
  errorClass: ErrorClass | null;
  errorMessage: string | null;
  /** Serialized summary JSON; at most MAX_SUMMARY_BYTES. */
  summary: string | null;
  skipReason: string | null;
  /**
   * When the task code really started, when that is later than the claim: an attempt claimed
   * ahead of a free slot (a worker's `prefetch`) waits in the worker's queue first. Recorded as
   * the attempt's start, fenced like the rest of the finish.
   */
  startedAt?: number;
  /**
   * A mapped task's first step (outcome "success"): the list it expands to, from core's
   * expandItems. Instead of settling, the task instance waits for its mapped instances, which
   * are created (or, on a rerun, diffed by key: kept ones reset, added ones created, missing ones
   * recorded as removed) in the same transaction; the first `maxActive` (by position) are queued,
   * the rest held until one ends. It settles when they all have (core's mappedTaskEnd): at once,
   * skipped, for an empty list.
   */
  map?: {
    items: readonly MappedItem[];
    maxActive: number | null;
    /**
     * Tasks mapped by key over this one (and over those: core's keyedChain), expanded with it
     * with the same keys: the instance of key k of each waits for its parent's instance of key k.
     */
    chained?: readonly { taskId: string; parent: string; maxActive?: number | null }[];
  };
}

export interface FinishOutcome {
  accepted: boolean;
  taskState: TaskState | null;
  runState: RunState | null;
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
