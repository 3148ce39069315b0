import type { RunState, TaskState, TriggerKind } from "../../core/model/states.ts";
import type { AuditEntry } from "./audit.ts";
import type { DatasetEvent } from "./datasets.ts";
import type { AlertEvent, AlertState, Incident, IncidentKind } from "./freshness.ts";
import type { MappedStateCounts } from "./mapping.ts";
import type { AttemptRecord, RunRecord, TaskInstanceRecord } from "./runs.ts";
import type { WatermarkRecord } from "./watermarks.ts";

/**
 * Read models for the web UI's and the API's pages: a page at a time by an index range (never a
 * count), and the few rows a page shows.
 */
export interface HistoryReads {
  /** One page of a pipeline's runs, newest interval first: an index range scan, never a count. */
  pageRuns(query: RunPageQuery): Promise<RunRecord[]>;
  /** The task instances of these runs (a grid's cells), in one query. */
  taskInstancesOfRuns(runIds: readonly string[]): Promise<TaskInstanceRecord[]>;
  /**
   * Only the state of each task instance of these runs, in one query: a grid's 3,650 cells without
   * the rest of each row. A mapped task is one cell (its own task instance), never its instances.
   */
  taskStatesOfRuns(runIds: readonly string[]): Promise<TaskStateCell[]>;
  /**
   * A run's task instances as its page lists them: one per task, a mapped task with its instances
   * counted by state (TaskInstanceRecord.mapped), never its instances themselves.
   */
  taskRowsOfRun(runId: string): Promise<TaskInstanceRecord[]>;
  /** The attempts of those task instances (a mapped task's own, which found its list; none of its instances'), oldest first. */
  attemptsOfTaskRows(runId: string): Promise<AttemptRecord[]>;
  /** One page of the audit log, newest first. */
  pageAudit(query: AuditPageQuery): Promise<AuditEntry[]>;
  /** A run's audit entries, newest first, optionally only some actions (its restatements, say). */
  auditOfRun(query: { runId: string; actions?: readonly string[]; limit: number }): Promise<AuditEntry[]>;
  /** One page of dataset events, newest first. */
  pageDatasetEvents(query: { dataset?: string; beforeId?: number; limit: number }): Promise<DatasetEvent[]>;
  /** One page of incidents, newest opened first (ties by key). */
  pageIncidents(query: { open?: boolean; before?: { openedAt: number; key: string }; limit: number }): Promise<Incident[]>;
  /** One page of alerts, newest queued first (by id), each with its incident's kind and subject. */
  pageAlerts(query: AlertPageQuery): Promise<AlertRecord[]>;
  /** Every watermark, or a pipeline's. */
  listWatermarks(pipelineId?: string): Promise<WatermarkRecord[]>;
}

export interface RunPageQuery {
  pipelineId: string;
  states?: readonly RunState[];
  triggers?: readonly TriggerKind[];
  /** Only the runs pinned to this code version. */
  codeVersion?: string;
  /** Runs whose interval starts at or after this. */
  fromStart?: number;
  /** Runs whose interval starts before this. */
  toStart?: number;
  /** The cursor: runs whose interval starts strictly before this. */
  beforeStart?: number;
  limit: number;
}

export interface TaskStateCell {
  runId: string;
  taskId: string;
  state: TaskState;
  /** The try it is on or ended with: above 1, it was retried (or cleared). */
  tryNumber: number;
  /** A mapped task that expanded its list: its instances counted by state (one row read); null for any other. */
  mapped: MappedStateCounts | null;
}

export interface AuditPageQuery {
  pipelineId?: string;
  actor?: string;
  action?: string;
  fromAt?: number;
  toAt?: number;
  /** The cursor: entries with a smaller id. */
  beforeId?: number;
  limit: number;
}

export interface AlertPageQuery {
  pipelineId?: string;
  incidentKey?: string;
  state?: AlertState;
  /** The cursor: alerts with a smaller id. */
  beforeId?: number;
  limit: number;
}

/** One alert for one incident event and one notifier, as the outbox holds it. */
export interface AlertRecord {
  id: number;
  incidentKey: string;
  incidentKind: IncidentKind;
  pipelineId: string | null;
  dataset: string | null;
  businessDate: string | null;
  message: string;
  event: AlertEvent;
  notifier: string;
  state: AlertState;
  /** Delivery attempts made so far. */
  tries: number;
  lastError: string | null;
  /** When the incident opened (an "open" alert), its snooze ended ("reopen") or it resolved ("resolve"): when it was queued. */
  queuedAt: number;
  /** When the next delivery attempt is due; null once sent. */
  nextAttemptAt: number | null;
  deliveredAt: number | null;
}
