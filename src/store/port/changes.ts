import type { IncidentKind } from "./freshness.ts";

/**
 * The change feed: changes of runs, task instances and incidents, written with the change, read by
 * live pages.
 */
export interface ChangeFeedStore {
  /**
   * Changes of runs, task instances and incidents with an id above `afterId`, oldest first. The
   * store writes them in the same transaction as the change, keeps the newest 100,000 or so, and
   * joins in the run's pipeline and business date (or the incident's) when read.
   */
  readChanges(afterId: number, limit: number): Promise<ChangeEvent[]>;
  /** The newest change id (0 before the first) and the oldest one still kept (null when none is). */
  changeBounds(): Promise<{ newest: number; oldest: number | null }>;
  /** Calls `onChange` soon after any process commits a change, where the adapter has a channel (PostgreSQL). */
  watchChanges?(onChange: () => void): Promise<() => Promise<void>>;
}

export interface ChangeEvent {
  id: number;
  kind: "run" | "task" | "incident";
  /** The run's or task instance's new state; "open", "acknowledged" or "resolved" for an incident. */
  state: string;
  runId: string | null;
  taskId: string | null;
  tryNumber: number | null;
  pipelineId: string | null;
  businessDate: string | null;
  incidentKey: string | null;
  incidentKind: IncidentKind | null;
  dataset: string | null;
}
