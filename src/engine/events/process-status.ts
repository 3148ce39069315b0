/**
 * What each long-running part of a process is doing now, as one value: its state is a tagged
 * union (never loose flags), with the counts that go with it. Health and metrics read these
 * (`Engine.processStatus()`); each part keeps its own and answers `status()`.
 */
export type ProcessStatus = SchedulerStatus | WorkerStatus | TaskHostsStatus | WatchdogStatus;

export interface SchedulerStatus {
  part: "scheduler";
  holder: string;
  state:
    | { kind: "idle" }
    /** Running, the lead not tried yet. */
    | { kind: "starting" }
    | { kind: "leading"; since: number }
    | { kind: "standing-by"; leader: string; since: number }
    /** Its last tick failed (the store out of reach): it tries again. */
    | { kind: "failing"; since: number; error: string }
    | { kind: "stopped" };
  ticks: number;
  lastTickAt: number | null;
}

export interface WorkerStatus {
  part: "worker";
  workerId: string;
  state: { kind: "idle" } | { kind: "running"; since: number } | { kind: "stopping"; since: number } | { kind: "stopped" };
  concurrency: number;
  /** Attempts whose task code runs now. */
  running: number;
  /** Claimed ahead of a free slot, not started. */
  queued: number;
  /** Attempts whose result was recorded since it started. */
  finished: number;
}

export interface TaskHostsStatus {
  part: "task-hosts";
  state: { kind: "open" } | { kind: "closed" };
  /** Hosts alive, and how many of them run an attempt. */
  hosts: number;
  busy: number;
  /** Attempts given to the pool and not sent to a host yet. */
  pending: number;
}

export interface WatchdogStatus {
  part: "watchdog";
  holder: string;
  state: { kind: "idle" } | { kind: "checking"; since: number } | { kind: "standing-by"; checker: string } | { kind: "failing"; since: number; error: string } | { kind: "stopped" };
  lastPassAt: number | null;
}
