/**
 * High-water marks of incremental loads, per pipeline and task: saved by the loader, set by hand
 * by an operator.
 */
export interface WatermarkRecordStore {
  /** The high-water mark an incremental load saved for this pipeline and task, or null. */
  getWatermark(pipelineId: string, taskId: string): Promise<string | number | null>;
  /** Stores it; the caller (the incremental loader) only ever moves it forward. */
  saveWatermark(pipelineId: string, taskId: string, value: string | number, at: number): Promise<void>;
  /**
   * Sets a watermark by hand, in one transaction with the check that no live run (queued or
   * running) of the pipeline still has that task to finish; when one has, nothing is written
   * and that run is named. The caller audits it.
   */
  setWatermarkByHand(request: { pipelineId: string; taskId: string; value: string | number; at: number }): Promise<
    { set: true; previous: string | number | null } | { set: false; liveRunId: string }
  >;
}

export interface WatermarkRecord {
  pipelineId: string;
  taskId: string;
  value: string | number;
  updatedAt: number;
}
