/** Task instance states, as in DESIGN.md. */
export const TASK_STATES = [
  "scheduled", // waiting for upstream
  "queued", // eligible; a worker may claim it
  "running",
  "success",
  "failed",
  "up_for_retry",
  "up_for_reschedule",
  "skipped",
  "upstream_failed",
  "removed", // a mapped instance whose key a rerun's list no longer has: kept with its history, never run again
] as const;
export type TaskState = (typeof TASK_STATES)[number];

export const RUN_STATES = ["queued", "running", "success", "failed"] as const;
export type RunState = (typeof RUN_STATES)[number];

/** "rescheduled": a sensor's poke found its condition not met; "lost": its worker stopped renewing the lease. */
export const ATTEMPT_STATES = ["running", "success", "failed", "skipped", "rescheduled", "lost"] as const;
export type AttemptState = (typeof ATTEMPT_STATES)[number];

/** "restate": the schedule runs an existing run again as part of its trailing window. */
export const TRIGGER_KINDS = ["schedule", "manual", "backfill", "data", "restate"] as const;
export type TriggerKind = (typeof TRIGGER_KINDS)[number];
