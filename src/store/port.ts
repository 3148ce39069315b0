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

  appendAudit(entry: NewAuditEntry): Promise<void>;
  listAudit(query: AuditQuery): Promise<AuditEntry[]>;
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
  runId: string;
  graphVersion: string;
  /** The tasks of that graph version; instances of tasks no longer in it are removed. */
  tasks: readonly NewTaskInstance[];
  /** Reset only these (default: every task instance). */
  taskIds?: readonly string[];
  params: Record<string, unknown>;
  at: number;
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

export interface ClaimRequest {
  workerId: string;
  pid: number;
  limit: number;
  now: number;
  leaseMs: number;
  /** Claim only from this run (an in-process `idem run`). */
  runId?: string;
  /** Where the attempt's log goes; stored on the attempt. */
  logPath: (runId: string, taskId: string, tryNumber: number) => string;
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
}

export interface AttemptFinish {
  attemptId: number;
  workerId: string;
  now: number;
  outcome: "success" | "failed" | "skipped";
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

/** Raised by any adapter for a request the store refuses (run busy, summary too large, ...). */
export class StoreConflictError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "StoreConflictError";
  }
}
