/**
 * Remote jobs of external tasks: the handle recorded before idem waits on it (fenced by the
 * attempt that submitted it), the job a task instance waits on, and jobs to cancel because their
 * task instance no longer waits on them (a clear, a cancelled backfill, a settle by hand).
 */
export interface ExternalJobStore {
  /**
   * Records a submitted job's handle, before anyone waits on it. Fenced: null (nothing written)
   * unless the attempt is running, this worker's and its task instance's current attempt, and
   * the task instance has no other job open or waiting to be cancelled.
   */
  recordExternalJob(job: NewExternalJob): Promise<ExternalJobRecord | null>;
  /**
   * The job a task instance waits on (`open`) or that waits to be cancelled
   * (`cancel_requested`), else null; and how many jobs it has submitted so far.
   */
  externalJobOf(runId: string, taskId: string): Promise<{ job: ExternalJobRecord | null; submissions: number }>;
  /**
   * Ends a job. With `by` (the attempt that saw it end, or timed it out): fenced like a finish,
   * from `open` or `cancel_requested`. Without: only a job waiting to be cancelled, by whoever
   * cancelled it. False when refused (already ended, or the attempt is stale).
   */
  endExternalJob(request: EndExternalJob): Promise<boolean>;
  /** Jobs waiting to be cancelled, of these pipelines, oldest first. */
  externalJobsToCancel(pipelineIds: readonly string[], limit: number): Promise<ExternalJobRecord[]>;
  /** Every job of a run's task, in the order submitted: what the attempt pages show. */
  listExternalJobs(runId: string, taskId?: string): Promise<ExternalJobRecord[]>;
}

export type ExternalJobState = "open" | "cancel_requested" | "succeeded" | "failed" | "cancelled";

export interface NewExternalJob {
  attemptId: number;
  workerId: string;
  /** The key it was submitted under (core's `externalJobKey`). */
  key: string;
  /** The handle as JSON text. */
  handle: string;
  adapter: string;
  /** Where a person can look at it, if the adapter says. */
  link: string | null;
  at: number;
  /**
   * The job holds its task instance's pool slots while it runs (`holdPoolWhileRemote`): the
   * store records the task instance's pool and slots with it, and claims count them until the
   * job ends, is asked to be cancelled, or its task instance ends (core's `remoteJobHoldsSlots`).
   */
  holdsPool: boolean;
}

export interface ExternalJobRecord {
  jobId: number;
  runId: string;
  pipelineId: string;
  taskId: string;
  /** The attempt that submitted it. */
  attemptId: number;
  tryNumber: number;
  key: string;
  handle: string;
  adapter: string;
  link: string | null;
  state: ExternalJobState;
  submittedAt: number;
  endedAt: number | null;
  /** Why it ended or is to be cancelled: the remote error, the timeout, the clear. */
  note: string | null;
  /** The pool and slots it was recorded holding while it runs; null and 0 when it holds none. */
  heldPool: string | null;
  heldSlots: number;
}

export interface EndExternalJob {
  jobId: number;
  state: "succeeded" | "failed" | "cancelled";
  at: number;
  note: string | null;
  by: { attemptId: number; workerId: string } | null;
}
