import type { BackfillProgress } from "../../core/policy/backfill-progress.ts";

export type { BackfillProgress } from "../../core/policy/backfill-progress.ts";

/** Backfills: a stored plan of intervals, started a few at a time, with its progress and state. */
export interface BackfillStore {
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
  /**
   * The item counts of these mapped tasks in the pipeline's latest `runs` ended runs, newest
   * interval first (a run where a task's list was never found gives it none), for a backfill
   * preview's estimate of mapped work.
   */
  mappedItemCounts(pipelineId: string, taskIds: readonly string[], runs: number): Promise<Map<string, number[]>>;
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
  /** The code the runs it runs again run: their own (`same`) or the pipeline's as loaded (`latest`, the default). New runs take the latest. */
  codeChoice?: BackfillCode;
}

export type BackfillCode = "same" | "latest";

export interface BackfillRecord extends Omit<NewBackfill, "items" | "at" | "codeChoice"> {
  codeChoice: BackfillCode;
  state: BackfillState;
  createdAt: number;
  updatedAt: number;
  endedAt: number | null;
}

