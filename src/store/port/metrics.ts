import type { RunState, TaskState } from "../../core/model/states.ts";
import type { IncidentKind } from "./freshness.ts";

/**
 * The counts a metrics scrape reads: each one statement over an index of live rows (or a short
 * index range of recent intervals), so a scrape costs O(what is active), never O(history).
 */
export interface MetricReads {
  /** Runs that are queued or running, by pipeline and state. */
  liveRunCounts(): Promise<RunStateCount[]>;
  /** Runs of these pipelines whose interval starts at or after `fromStart`, by pipeline and state. */
  recentRunCounts(query: { pipelineIds: readonly string[]; fromStart: number }): Promise<RunStateCount[]>;
  /** The task instances of the runs that are queued or running, by pipeline, task and state. */
  liveRunTaskCounts(): Promise<TaskStateCount[]>;
  /** Queued task instances by pool (null: none): how many, and when the longest-waiting one was queued. */
  queuedByPool(): Promise<PoolQueue[]>;
  /**
   * Unresolved incidents by kind and pipeline (null: an incident of the installation,
   * scheduler_down), apart by acknowledgement and its end, so core's `incidentState` tells an
   * acknowledged one from one open again after its snooze.
   */
  openIncidentCounts(): Promise<IncidentCount[]>;
}

export interface RunStateCount {
  pipelineId: string;
  state: RunState;
  count: number;
}

export interface TaskStateCount {
  pipelineId: string;
  taskId: string;
  state: TaskState;
  count: number;
}

export interface PoolQueue {
  pool: string | null;
  queued: number;
  oldestQueuedAt: number;
}

export interface IncidentCount {
  kind: IncidentKind;
  pipelineId: string | null;
  /** Whether a person acknowledged the incident, and until when (null: until resolved). */
  acknowledged: boolean;
  ackUntil: number | null;
  count: number;
}
