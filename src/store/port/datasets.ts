import type { TriggerKind } from "../../core/model/states.ts";

/**
 * Dataset events: recorded when a producing task succeeds, read by data-triggered pipelines and by
 * the pages that list them.
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
}

export interface DatasetEvent {
  id: number;
  dataset: string;
  businessDate: string;
  runId: string;
  pipelineId: string;
  taskId: string;
  trigger: TriggerKind;
  at: number;
}
