import type { TriggerKind } from "../../core/model/states.ts";
import type { AuditEntry, NewAuditEntry } from "./audit.ts";

/**
 * Dataset events: recorded when a producing task succeeds or when a producer outside idem says a
 * dataset is ready, read by data-triggered pipelines and by the pages that list them.
 */
export interface DatasetStore {
  /**
   * Reads dataset events newer than the pipeline's cursor for the datasets it waits on, keeps
   * the newest per (business date, dataset), and returns each business date with the datasets
   * that have an unconsumed event for it.
   */
  collectDatasetEvents(pipelineId: string, datasets: readonly string[]): Promise<Map<string, Set<string>>>;
  /** Forgets the events that triggered a run for this business date. */
  consumeDatasetWaits(pipelineId: string, businessDate: string): Promise<void>;
  listDatasetEvents(query: { dataset?: string; limit?: number }): Promise<DatasetEvent[]>;
  /**
   * Records an event from outside idem, and in the same transaction its audit entry, unless the
   * dataset has an event with this idempotency key already: then nothing is written, and the
   * answer is that first event (`created` false, no audit entry).
   */
  recordExternalDatasetEvent(request: NewExternalDatasetEvent): Promise<ExternalDatasetEventRecorded>;
}

/** Where an event from outside idem came in. */
export type ExternalEventSource = "api" | "cli" | "webhook";
export const EXTERNAL_EVENT_SOURCES: readonly ExternalEventSource[] = ["api", "cli", "webhook"];

export type DatasetEvent = ProducedDatasetEvent | ExternalDatasetEvent;

interface DatasetEventBase {
  id: number;
  dataset: string;
  businessDate: string;
  at: number;
}

/** A producing task's success. */
export interface ProducedDatasetEvent extends DatasetEventBase {
  source: "run";
  runId: string;
  pipelineId: string;
  taskId: string;
  trigger: TriggerKind;
}

/** A producer outside idem said the dataset is ready for the business date. */
export interface ExternalDatasetEvent extends DatasetEventBase {
  source: ExternalEventSource;
  /** The token's name, the CLI's user, or the webhook. */
  actor: string;
  idempotencyKey: string;
  /** The producer's JSON summary as it sent it (text), or null. */
  summary: string | null;
}

export interface NewExternalDatasetEvent {
  dataset: string;
  businessDate: string;
  idempotencyKey: string;
  source: ExternalEventSource;
  actor: string;
  summary: string | null;
  at: number;
  /** Written with the event, and only when the event is new. */
  audit: NewAuditEntry;
}

export interface ExternalDatasetEventRecorded {
  /** The event as first recorded under this key. */
  event: ExternalDatasetEvent;
  /** False when the key was known: nothing was written. */
  created: boolean;
  audit: AuditEntry | null;
}
