import type { AuditEntry, NewAuditEntry } from "./audit.ts";
import type { RunRecord } from "./runs.ts";

/**
 * What the scheduler keeps per pipeline: pause, the schedule cursor, intervals skipped on purpose,
 * the ledger's raw material, restatements refused, frozen periods as recorded, and its wake-ups.
 */
export interface SchedulingStore {
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
  /**
   * Records on a run why the schedule did not restate it after the interval starting at
   * `headStart` (a frozen period). True the first time for that head; false when already noted.
   */
  noteRestateRefusal(request: { runId: string; headStart: number; note: string }): Promise<boolean>;
  /** The frozen periods last recorded for a scope (a pipeline id, or "*" for the project); null before the first. */
  recordedFrozenPeriods(scope: string): Promise<RecordedFrozenPeriods | null>;
  /**
   * Records a scope's frozen periods and, in the same transaction, the audit entry of the change,
   * only while the recorded text is still `expected` (null: nothing recorded yet). Null when
   * another process recorded first: read again and decide again.
   */
  recordFrozenPeriods(request: RecordFrozenPeriods): Promise<AuditEntry | null>;
  /**
   * Calls `onWake` soon after any process changes what the scheduler acts on: a run ended (the
   * run cap has room; a restatement or a backfill may go on), a dataset was published, a
   * backfill was requested or changed state, a pipeline was paused or resumed. Not after every
   * task's finish. Adapters without a channel of their own (SQLite) leave it out; the engine
   * then watches a file in the state directory, which workers and the engine's actions touch.
   */
  watchScheduling?(onWake: () => void): Promise<() => Promise<void>>;
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
