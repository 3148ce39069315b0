import type { TaskState } from "../../core/model/states.ts";

/**
 * A mapped task's instances, read by key: what a reduce downstream receives (their summaries, a
 * page at a time), what `idem tasks` and the API list. Keyset pages over the unique index of
 * (run, task, key): never a count, never an offset.
 */
export interface MappingReads {
  pageMappedInstances(query: MappedInstanceQuery): Promise<MappedInstanceRecord[]>;
}

/**
 * How many of a mapped task's instances are in each state, kept on the mapped task's own row by
 * the trigger that keeps its live and failing counts: one row read, whatever their number.
 */
export type MappedStateCounts = Readonly<Record<TaskState, number>>;

export interface MappedInstanceQuery {
  runId: string;
  /** The mapped task (not an instance's id). */
  taskId: string;
  /** Keys after this one, in key order (byte order on both stores). */
  afterKey?: string;
  /** Only keys starting with this. */
  keyPrefix?: string;
  states?: readonly TaskState[];
  limit: number;
}

export interface MappedInstanceRecord {
  /** The instance's id: core's mappedTaskId(task, key). */
  taskId: string;
  key: string;
  /** Its place in the list that last expanded it. */
  position: number;
  /** The item, as JSON text. */
  item: string;
  state: TaskState;
  tryNumber: number;
  reason: string | null;
  /** When its latest try started and ended (null: not yet). */
  startedAt: number | null;
  endedAt: number | null;
  /** The summary of its latest successful attempt, if any. */
  summary: Record<string, unknown> | null;
}
