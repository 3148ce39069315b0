/**
 * Every event the engine's long-running parts emit, by name, with its payload: the one seam they
 * speak through. The scheduler, the worker, the task-host pool, the checker (watchdog and alert
 * dispatcher), the change feed and the HTTP server emit; log lines, metrics, traces and health
 * subscribe (`engine-events.ts`). A new event is a member here, and `event-lines.ts` (a `Record`
 * over the names) fails to compile until it says how the event is logged.
 *
 * Payloads name what they are about with the same fields everywhere (`pipelineId`, `runId`,
 * `taskId`, `tryNumber`, `businessDate`, `workerId`), which the structured log turns into its
 * locating fields.
 */
export interface EngineEventMap {
  // --- the scheduler ------------------------------------------------------------------------------
  "scheduler:started": { holder: string; pipelines: number };
  /** One tick that did not fail: whether this scheduler led, how long it took, how late it began. */
  "scheduler:tick": { holder: string; leader: boolean; durationMs: number; lagMs: number; runsCreated: number; attemptsLost: number };
  "scheduler:tick-failed": { holder: string; error: string };
  /** This process took a leadership lease (the scheduler's, or the checker's). */
  "lease:won": { role: LeaseRole; holder: string };
  /** This process does not hold the lease: another does (`leader`), first seen or taken from it. */
  "lease:lost": { role: LeaseRole; holder: string; leader: string };
  "lease:renewal-failed": { role: LeaseRole; holder: string; error: string };
  "run:created": { pipelineId: string; runId: string; businessDate: string; trigger: "schedule" | "data" };
  /**
   * This process recorded the write that ended a run (success or failed): an attempt's result, a
   * lost attempt's, or an operator's skip or mark. Emitted once by whichever process ended it.
   */
  "run:ended": { pipelineId: string; runId: string; state: string; by: "attempt" | "lost-attempt" | "operator" };
  /** Intervals accounted for without a run: passed over by catch-up "latest". */
  "intervals:skipped": { pipelineId: string; count: number; newest: string };
  "restate:started": { pipelineId: string; runId: string; businessDate: string; after: string; restatement: number };
  /** A restatement not made: its reason (a frozen date, a live run, another scheduler first). */
  "restate:refused": { pipelineId: string; runId: string; reason: string };
  "backfill:run-started": { backfillId: string; pipelineId: string; runId: string; businessDate: string; action: string };
  "backfill:run-left": { backfillId: string; pipelineId: string; runId: string; state: string };
  /** A run the backfill was to run again on its own code, whose code cannot be loaded: left as it is. */
  "backfill:code-missing": { backfillId: string; pipelineId: string; runId: string; reason: string };
  "backfill:ended": { backfillId: string; pipelineId: string; state: "completed" | "failed"; succeeded: number; failed: number };
  /** The leading scheduler's collection of a pipeline's old bundles removed some (`collected`), or kept some a run needed. */
  "bundles:collected": { pipelineId: string; collected: string[]; needed: string[] };
  "bundles:collect-failed": { pipelineId: string; error: string };
  /** An attempt whose worker stopped renewing its lease, recorded lost by the scheduler. */
  "attempt:lost": Omit<AttemptLocator, "businessDate" | "mapKey"> & { workerId: string; taskState: string | null };

  // --- a worker -------------------------------------------------------------------------------------
  "worker:started": { workerId: string; concurrency: number; prefetch: number | "auto" };
  "attempt:claimed": AttemptLocator & { workerId: string; claimedAt: number; queueWaitMs: number | null };
  /** One claim from the store (with the results it recorded in the same call, if any): how long it took. */
  "worker:claimed": { workerId: string; wanted: number; claimed: number; finishes: number; durationMs: number };
  /** The attempt's task code was handed to where it runs (a task host, a command's process). */
  "attempt:started": AttemptLocator & { workerId: string };
  /** The attempt's result was recorded. */
  "attempt:finished": AttemptFinished;
  /** A claimed attempt that ended without its task code running (its pipeline gone, a stop). */
  "attempt:not-started": AttemptLocator & { workerId: string; reason: string };
  /** Given back untouched on the same try, for anyone to claim. */
  "attempt:handed-back": AttemptLocator & { workerId: string; reason: string; reloading: boolean };
  /** The store refused the result: the attempt is no longer this worker's (its lease lapsed). */
  "attempt:result-refused": AttemptLocator & { workerId: string };
  "worker:stopping": { workerId: string; graceMs: number; running: number };
  /** Attempts handed back at once: those claimed ahead that had not started, or those still running at the end of the grace. */
  "worker:handed-back": { workerId: string; count: number; notStarted: boolean };
  "worker:store-failed": { workerId: string; error: string; trouble: WorkerTrouble };
  /** A remote job no task instance waits on any more (a cleared task, a cancelled backfill) was cancelled and recorded so. */
  "external-job:cancelled": { runId: string; taskId: string; adapter: string; handle: string; note: string | null };
  /** Cancelling such a job failed: the next pass tries again. */
  "external-job:cancel-failed": { runId: string; taskId: string; adapter: string; handle: string; error: string };

  // --- task hosts -----------------------------------------------------------------------------------
  "host:started": { pid: number; hosts: number };
  /** `expected`: the pool stopped it (idle, shut down, killed on a timeout); else it died. */
  "host:exited": { pid: number; code: number | null; signal: string | null; expected: boolean; hosts: number };
  /** What a host printed on stdout outside any attempt (a pipeline file's top level, say): told, not mixed raw into the process's log. */
  "host:output": { pid: number; text: string };

  // --- the long-lived frame -------------------------------------------------------------------------
  "pipelines:reloaded": { pipelines: number; added: string[]; changed: string[]; removed: string[] };
  "pipelines:reload-failed": { error: string };
  "pipeline-file:broken": { message: string };
  "pipeline-file:fixed": { file: string };

  // --- the checker ----------------------------------------------------------------------------------
  "watchdog:failed": { holder: string; error: string };
  "incident:opened": { key: string; pipelineId: string | null; message: string };
  "incident:resolved": { key: string; resolution: string };
  /** A snooze ended and the cause is still there: the incident is open again. */
  "incident:snooze-ended": { key: string; message: string };
  /** The `log` notifier's alert: one line in the process's log. */
  "alert:logged": { event: string; key: string; cause: string };
  "alert:retrying": { event: string; incidentKey: string; notifier: string; error: string; retryInMs: number };
  "alert:delivery-failed": { error: string };
  "notifier:failing": { notifier: string; failures: number };

  // --- the change feed and the HTTP server ----------------------------------------------------------
  "change-feed:failed": { error: string; reading: boolean };
  "request:served": { method: string; path: string; status: number; durationMs: number };
  /** A request that ended in an unexpected error (a 500): the stack, for the operator. */
  "request:failed": { method: string; path: string; error: string };
}

export type EngineEventName = keyof EngineEventMap;

/** One event with its name, as a subscriber to every event (the log) receives it. */
export type EngineEvent = { [K in EngineEventName]: { name: K; payload: EngineEventMap[K] } }[EngineEventName];

export type LeaseRole = "scheduler" | "checker";

/** The fields that locate an attempt: the task instance's run and try. */
export interface AttemptLocator {
  pipelineId: string;
  runId: string;
  taskId: string;
  /** The key of a mapped task's instance (fan-out); null for a task that is not mapped. */
  mapKey: string | null;
  tryNumber: number;
  businessDate: string;
}

export interface AttemptFinished extends AttemptLocator {
  workerId: string;
  /** The task instance's state once the attempt's result was recorded (success, failed, up_for_retry, ...). */
  taskState: string | null;
  /** The run's state once it was recorded: success or failed when this attempt ended the run. */
  runState: string | null;
  /** What the attempt's record says: its start and end (epoch ms), its outcome and error. */
  startedAt: number;
  endedAt: number;
  outcome: string;
  errorClass: string | null;
  errorMessage: string | null;
  durationMs: number;
}

/** What a worker failed to do with the store. */
export type WorkerTrouble =
  | { kind: "finish-and-claim"; results: number }
  | { kind: "heartbeat" }
  | { kind: "lease-renewal"; attempts: number }
  /** Looking for remote jobs to cancel (worker/external-cancels.ts). */
  | { kind: "external-cancels" }
  /** Out of reach for a whole lease: the worker gives up `what`. */
  | { kind: "gave-up"; what: string };
