import type { TriggerKind } from "../../core/model/states.ts";
import type { IncidentKind } from "../../core/model/incidents.ts";
import type { IncidentAcknowledgement, IncidentAction } from "../../core/policy/incident-lifecycle.ts";
import type { AuditEntry } from "./audit.ts";
import type { RunRecord } from "./runs.ts";

/**
 * Freshness, incidents and alerts: what was published for which business date, incidents opened
 * once per key, and the outbox of alerts to deliver.
 */
export interface FreshnessStore {
  /** Published business dates of a dataset in [fromDate, toDate], oldest first. */
  listFreshness(dataset: string, fromDate: string, toDate: string): Promise<FreshnessRecord[]>;
  /** Every publication of one business date, oldest first (a rerun publishes again). */
  freshnessHistory(dataset: string, businessDate: string): Promise<FreshnessPublication[]>;
  /**
   * Opens an incident unless one with the same key was ever opened (deduplication survives
   * restarts), queueing one "open" alert per notifier in the same transaction. True if opened.
   * An incident with `closed` is a fact recorded closed (a publication after its deadline): it
   * alerts once, on opening, and is resolved at once by idem with that resolution.
   */
  openIncident(incident: NewIncident): Promise<boolean>;
  /**
   * Resolves an unresolved incident whose cause ended (by idem, core's SYSTEM_ACTOR), audited and
   * queueing one "resolve" alert per notifier told of the opening, in one transaction. True if it
   * was unresolved.
   */
  resolveIncident(key: string, at: number, resolution: string): Promise<boolean>;
  /**
   * A person's acknowledgement (a snooze when it has an end) or resolution, decided by core's
   * `decideIncidentAction` and audited in the same transaction; a resolution queues one "resolve"
   * alert per notifier told of the opening. Refused (StoreConflictError) as the decision says, or
   * "no incident <key>".
   */
  actOnIncident(request: IncidentActionRequest): Promise<{ incident: Incident; audit: AuditEntry }>;
  /**
   * Tells the end of an incident's snooze when core's `reopenDue` says it is due at `at`: records
   * whose end was told (`reopenedFor`) and queues one "reopen" alert per notifier told of the
   * opening, in one transaction. True if it did; false when not due (told already, no snooze, an
   * end still ahead, resolved) or no such incident.
   */
  reopenIncident(key: string, at: number): Promise<boolean>;
  getIncident(key: string): Promise<Incident | null>;
  listIncidents(query: { open?: boolean; limit?: number }): Promise<Incident[]>;
  /**
   * When the pipeline's first recorded graph version with a promise for the dataset was
   * recorded: the promise exists since then. Null when no recorded version has it yet.
   */
  promiseFirstSeen(pipelineId: string, dataset: string): Promise<number | null>;
  /** Alerts not delivered yet whose next attempt is due. */
  dueAlerts(now: number, limit: number): Promise<OutboxAlert[]>;
  recordAlertDelivery(id: number, result: { at: number; error?: string; nextAttemptAt?: number }): Promise<void>;
  /** Runs that ended failed at or after `since`. */
  failedRunsSince(since: number): Promise<RunRecord[]>;
}

export interface FreshnessRecord {
  dataset: string;
  businessDate: string;
  publishedAt: number;
  firstPublishedAt: number;
  pipelineId: string;
  runId: string;
  taskId: string;
  summary: Record<string, unknown> | null;
  /** Declared empty (no rows, on purpose), with the reason. */
  emptyReason: string | null;
}

export interface FreshnessPublication {
  dataset: string;
  businessDate: string;
  publishedAt: number;
  runId: string;
  emptyReason: string | null;
  /** How the publishing run was triggered ("restate": a republication by the trailing window); null for old rows. */
  trigger: TriggerKind | null;
  /** The publishing task's summary: what it wrote. */
  summary: Record<string, unknown> | null;
}

export type { IncidentKind } from "../../core/model/incidents.ts";

export interface NewIncident {
  key: string;
  kind: IncidentKind;
  dataset: string | null;
  pipelineId: string | null;
  businessDate: string | null;
  runId: string | null;
  message: string;
  /** Notifier names to alert. */
  notify: readonly string[];
  at: number;
  /** Recorded closed, resolved at once by idem with this resolution (a fact, not a condition). */
  closed?: string;
}

export interface Incident extends Omit<NewIncident, "at" | "key" | "closed"> {
  key: string;
  openedAt: number;
  /** The newest acknowledgement (a snooze when it has an end); core's incidentState says whether it still holds. */
  acknowledgement: IncidentAcknowledgement | null;
  resolvedAt: number | null;
  /** A person, or core's SYSTEM_ACTOR when the cause ended. */
  resolvedBy: string | null;
  resolution: string | null;
  /** The `at` of the acknowledgement whose snooze's end was told by a "reopen" alert; null: none yet. */
  reopenedFor: number | null;
}

export type IncidentActionRequest = IncidentAction & { key: string; at: number };

/** What an alert tells: an incident opened, its snooze ended with it unresolved, it resolved. */
export type AlertEvent = "open" | "reopen" | "resolve";

export interface OutboxAlert {
  id: number;
  incidentKey: string;
  event: AlertEvent;
  notifier: string;
  payload: Record<string, unknown>;
  tries: number;
}

/**
 * queued: not tried yet; failed: the last try failed and another is due at nextAttemptAt; sent:
 * delivered.
 */
export type AlertState = "queued" | "failed" | "sent";

export const ALERT_STATES: readonly AlertState[] = ["queued", "failed", "sent"];
